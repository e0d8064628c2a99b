/**
 * The limits of one organisation's browser box, watched from outside (src/browser/README.md
 * "Limits"): the memory of the whole box (proportional set size, so Chromium's many processes
 * that map the same program count it once), the fill of its private disk (the tmpfs holding its
 * profile, downloads and temporary files, and its /dev/shm), and the CPU time each task costs
 * it. Over a limit, the limit is named in words; the box's supervisor (src/containment
 * supervisor.ts) then kills the box, and the pool fails its tasks with that reason. The number
 * of pages and contexts is counted by the relay, which sees them made (src/browser/relay.ts).
 *
 * Linux only (/proc). The supervisor samples the box's tree (`inspect`, on each sample): walked
 * for new processes once a second; in between, the processes already known are measured, every
 * 250 ms while a task runs and every 2 s at rest (`BOX_WATCH`). Resident memory (cheap to read)
 * bounds the proportional set size from above, so the latter (costly: the kernel walks each
 * process's page tables) is read only when the former is over the limit. A download fills the
 * disk faster than any poll looks, and Chromium removes it once a write fails, so the fill of the
 * private disk is also looked at on every change in the downloads folder (inotify, through the
 * box's root in /proc: `onFull`).
 *
 * The proportional set size is also read every 5 s and handed to `onMeasure`: the pool counts it
 * against the memory budget of tenant processes (src/containment/budget.ts).
 */
import { statfsSync, watch, type FSWatcher } from 'node:fs';
import { cpuMs, pssBytes, type TreeSample, type WatchOptions } from '../containment/index.js';

export interface BrowserLimits {
  /** BROWSER_MEMORY_MB: the whole box's memory. */
  memoryBytes: number;
  /** BROWSER_DISK_MB: the size of its private tmpfs (profile, downloads, temporary files). */
  diskBytes: number;
  /** BROWSER_TASK_CPU_MS: the box's CPU time one task may cost. */
  taskCpuMs: number;
}

/** How the supervisor samples a box: every 250 ms while a task runs, every 2 s at rest, the tree walked once a second. */
export const BOX_WATCH: Pick<WatchOptions, 'busyMs' | 'idleMs' | 'walkEvery'> = {
  busyMs: 250,
  idleMs: 2000,
  walkEvery: { busy: 4, idle: 1 },
};
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

export interface WatchdogOptions {
  /**
   * The box has mount namespaces of its own (its first two processes are bubblewrap's), so its
   * private disk is seen through the third's root.
   */
  namespaces: boolean;
  limits: BrowserLimits;
  /** The box's proportional set size in bytes, every 5 s and whenever it is read for the memory limit. */
  onMeasure?: ((bytes: number) => void) | undefined;
  /** How many tasks run on the box now (the supervisor samples every 250 ms while any does). */
  onTasks(count: number): void;
  /** The private disk filled between samples (seen through the downloads folder): the limit in words. */
  onFull(reason: string): void;
}

export class BrowserWatchdog {
  private readonly shares = new Set<CpuShare>();
  private cpuSeen = -1;
  private measured = 0;
  private stopped = false;
  private downloads: FSWatcher | undefined;

  constructor(private readonly opts: WatchdogOptions) {}

  /** A task starts on this box: its CPU share is counted until `end()`. */
  task(): CpuShare {
    const share: CpuShare = {
      usedMs: 0,
      end: () => {
        this.shares.delete(share);
        this.opts.onTasks(this.shares.size);
      },
    };
    this.shares.add(share);
    this.opts.onTasks(this.shares.size);
    return share;
  }

  stop(): void {
    this.stopped = true;
    this.downloads?.close();
  }

  /**
   * The limit the box is over now, in words, or undefined: `pids` is its tree as last walked,
   * `rssBytes` their resident memory now (the supervisor's sample).
   */
  readonly inspect = async ({ pids, rssBytes }: TreeSample): Promise<string | undefined> => {
    if (this.stopped) return undefined;
    const { memoryBytes, taskCpuMs } = this.opts.limits;
    const over = rssBytes > memoryBytes;
    if (over || (this.opts.onMeasure && Date.now() - this.measured >= MEASURE_MS)) {
      const pss = await pssBytes(pids);
      this.measured = Date.now();
      if (pss > 0) this.opts.onMeasure?.(pss);
      if (over && pss > memoryBytes)
        return `used more than ${Math.round(memoryBytes / MiB)} MiB of memory (${Math.round(pss / MiB)} MiB; BROWSER_MEMORY_MB)`;
    }
    const inside = this.opts.namespaces ? pids[2] : undefined;
    if (inside !== undefined) {
      this.watchDownloads(inside);
      const full = this.diskFull(inside);
      if (full) return full;
    }
    const cpu = await cpuMs(pids);
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
  };

  /** Looks at the private disk on every change in the box's downloads folder, once the box's processes are known. */
  private watchDownloads(inside: number): void {
    if (this.downloads || this.stopped) return;
    try {
      this.downloads = watch(`/proc/${inside}/root/tmp/downloads`, { persistent: false }, () => {
        if (this.stopped) return;
        const full = this.diskFull(inside);
        if (full) {
          this.stop();
          this.opts.onFull(full);
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
        return `filled its private disk (${Math.round((dir === 'tmp' ? this.opts.limits.diskBytes : disk.size) / MiB)} MiB of /${dir} for its profile, downloads and temporary files; BROWSER_DISK_MB)`;
    }
    return undefined;
  }
}
