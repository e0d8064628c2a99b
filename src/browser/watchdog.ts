/**
 * The limits of one organisation's browser box, watched from outside (src/browser/README.md
 * "Limits"): the memory of the whole box (proportional set size, so Chromium's many processes
 * that map the same program count it once), the fill of its private disk (the tmpfs holding its
 * profile, downloads and temporary files, and its /dev/shm), and the CPU time each task costs
 * it. Over a limit, `onBreach` is called once with the limit named; the pool then kills the box
 * and fails its tasks with that reason. The number of pages and contexts is counted by the relay,
 * which sees them made (src/browser/relay.ts).
 *
 * Linux only (/proc). The tree is walked for new processes once a second; in between, the
 * processes already known are measured, every 250 ms while a task runs and every 2 s at rest.
 * Resident memory (cheap to read) bounds the proportional set size from above, so the latter
 * (costly: the kernel walks each process's page tables) is read only when the former is over
 * the limit. A download fills the disk faster than any poll looks, and Chromium removes it once
 * a write fails, so the fill of the private disk is also looked at on every change in the
 * downloads folder (inotify, through the box's root in /proc).
 *
 * The proportional set size is also read every 5 s and handed to `onMeasure`: the pool counts it
 * against the memory budget of tenant processes (src/containment/budget.ts).
 */
import { statfsSync, watch, type FSWatcher } from 'node:fs';
import { cpuMs, processTree, pssBytes, residentBytes } from '../containment/index.js';

export interface BrowserLimits {
  /** BROWSER_MEMORY_MB: the whole box's memory. */
  memoryBytes: number;
  /** BROWSER_DISK_MB: the size of its private tmpfs (profile, downloads, temporary files). */
  diskBytes: number;
  /** BROWSER_TASK_CPU_MS: the box's CPU time one task may cost. */
  taskCpuMs: number;
}

const BUSY_MS = 250;
const IDLE_MS = 2000;
const WALK_MS = 1000;
/** The box's proportional set size is reported (`onMeasure`) at most this often. */
const MEASURE_MS = 5000;
const MiB = 1024 * 1024;
/** A private disk with less free than this (of its size) is full: Chromium's writes there fail. */
const FULL_FRACTION = 0.02;

/** A task's share of the box's CPU time: while several run, each is charged an equal part. */
export interface CpuShare {
  usedMs: number;
  end(): void;
}

/** Bytes used of the tmpfs at `dir`, and its size; undefined when it cannot be read. */
function filled(dir: string): { used: number; size: number } | undefined {
  try {
    const s = statfsSync(dir);
    return { used: (s.blocks - s.bfree) * s.bsize, size: s.blocks * s.bsize };
  } catch {
    return undefined;
  }
}

export class BrowserWatchdog {
  private readonly shares = new Set<CpuShare>();
  private tree: number[] = [];
  private walked = 0;
  private cpuSeen = -1;
  private measured = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private looking = false;
  private downloads: FSWatcher | undefined;

  /**
   * `pid`: the box's first process. `namespaces`: the box has mount namespaces of its own (its
   * first two processes are bubblewrap's), so its private disk is seen through the third's root.
   * `onMeasure`: the box's proportional set size in bytes, every 5 s and whenever it is read for
   * the memory limit.
   */
  constructor(
    private readonly box: { pid: number; namespaces: boolean },
    private readonly limits: BrowserLimits,
    private readonly onBreach: (reason: string) => void,
    private readonly onMeasure?: (bytes: number) => void,
  ) {
    if (process.platform === 'linux') this.arm(0);
  }

  /** A task starts on this box: its CPU share is counted until `end()`. */
  task(): CpuShare {
    const share: CpuShare = { usedMs: 0, end: () => this.shares.delete(share) };
    this.shares.add(share);
    this.arm(0);
    return share;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.downloads?.close();
  }

  /** Looks at the private disk on every change in the box's downloads folder, once the box's processes are known. */
  private watchDownloads(inside: number): void {
    if (this.downloads || this.stopped) return;
    try {
      this.downloads = watch(`/proc/${inside}/root/tmp/downloads`, { persistent: false }, () => {
        if (this.stopped) return;
        const full = this.diskFull(inside);
        if (full) {
          this.stop();
          this.onBreach(full);
        }
      });
      this.downloads.on('error', () => this.downloads?.close());
    } catch {
      // no downloads folder (yet): the poll still looks at the disk
    }
  }

  /** The disk limit in words when the box's private /tmp or /dev/shm is full, else undefined. */
  private diskFull(inside: number): string | undefined {
    for (const dir of ['tmp', 'dev/shm']) {
      const disk = filled(`/proc/${inside}/root/${dir}`);
      if (disk && disk.size > 0 && disk.size - disk.used < disk.size * FULL_FRACTION)
        return `filled its private disk (${Math.round((dir === 'tmp' ? this.limits.diskBytes : disk.size) / MiB)} MiB of /${dir} for its profile, downloads and temporary files; BROWSER_DISK_MB)`;
    }
    return undefined;
  }

  private arm(ms: number): void {
    if (this.stopped || this.looking) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.look(), ms);
    this.timer.unref();
  }

  private async look(): Promise<void> {
    this.looking = true;
    let breach: string | undefined;
    try {
      breach = await this.measure();
    } finally {
      this.looking = false;
    }
    if (this.stopped) return;
    if (breach) {
      this.stop();
      this.onBreach(breach);
      return;
    }
    this.arm(this.shares.size > 0 ? BUSY_MS : IDLE_MS);
  }

  /** The limit the box is over now, in words, or undefined. */
  private async measure(): Promise<string | undefined> {
    if (Date.now() - this.walked >= WALK_MS || this.tree.length === 0) {
      this.walked = Date.now();
      this.tree = await processTree(this.box.pid);
    }
    const { memoryBytes, taskCpuMs } = this.limits;
    const over = residentBytes(this.tree) > memoryBytes;
    if (over || (this.onMeasure && Date.now() - this.measured >= MEASURE_MS)) {
      const pss = await pssBytes(this.tree);
      this.measured = Date.now();
      if (pss > 0) this.onMeasure?.(pss);
      if (over && pss > memoryBytes)
        return `used more than ${Math.round(memoryBytes / MiB)} MiB of memory (${Math.round(pss / MiB)} MiB; BROWSER_MEMORY_MB)`;
    }
    const inside = this.box.namespaces ? this.tree[2] : undefined;
    if (inside !== undefined) {
      this.watchDownloads(inside);
      const full = this.diskFull(inside);
      if (full) return full;
    }
    const cpu = await cpuMs(this.tree);
    // Gone processes stop counting until their parent has waited for them: the total only grows.
    const spent = this.cpuSeen < 0 ? 0 : Math.max(0, cpu - this.cpuSeen);
    this.cpuSeen = Math.max(this.cpuSeen, cpu);
    if (this.shares.size > 0 && spent > 0) {
      const each = spent / this.shares.size;
      for (const share of this.shares) {
        share.usedMs += each;
        if (share.usedMs > taskCpuMs)
          return `used more than ${Math.round(taskCpuMs / 1000)} s of CPU time for one task (BROWSER_TASK_CPU_MS)`;
      }
    }
    return undefined;
  }
}
