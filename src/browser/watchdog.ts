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
 * disk faster than any poll looks, and Chromium deletes it once a write fails, so the fill of the
 * private disk is also looked at on every change in the downloads folder (inotify, through the
 * box's root in /proc: `onFull`), and the service holds each download file open
 * (`HeldDownloads`): the space of a file Chromium deleted stays counted until the disk has been
 * looked at, however late a loaded machine runs the look.
 *
 * The proportional set size is also read every 5 s and handed to `onMeasure`: the pool counts it
 * against the memory budget of tenant processes (src/containment/budget.ts).
 */
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  statSync,
  statfsSync,
  watch,
  type FSWatcher,
} from 'node:fs';
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

/** The box's downloads folder, as its processes name it. */
const DOWNLOADS = '/tmp/downloads';
/** At most this many download files are held open per box. */
const MAX_HELD = 32;
/** The box's open files are scanned for new downloads at most this often. */
const SCAN_GAP_MS = 100;
/** Names seen in the downloads folder that are remembered (a new one asks for a scan). */
const MAX_NAMES = 1024;

/**
 * The download files of one box, held open by the service: when Chromium deletes a file whose
 * write failed for lack of space, its space stays in use until the watchdog has looked at the
 * disk and let it go (`releaseDeleted`). A file is opened through the descriptor of the box
 * process that has it open (/proc/<pid>/fd/<n>), never by a path inside the box, whose folders
 * the box could have replaced with links out of it; it is kept only when it is a regular file on
 * the box's private disk.
 */
export class HeldDownloads {
  /** `dev:ino` → the service's descriptor. */
  private readonly held = new Map<string, number>();
  private readonly names = new Set<string>();
  private lastScan = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly opts: {
      /** The downloads folder, as the box's processes name it. */
      folder: string;
      /** The box's processes, as last walked. */
      pids(): readonly number[];
      /** The device of the box's private disk; undefined while it cannot be read. */
      disk(): number | undefined;
    },
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** A file named `name` changed in the downloads folder: a name not seen before asks for a scan. */
  seen(name: string | null): void {
    if (this.closed || name === null || this.names.has(name)) return;
    if (this.names.size >= MAX_NAMES) this.names.clear();
    this.names.add(name);
    const wait = this.lastScan + SCAN_GAP_MS - Date.now();
    if (wait <= 0) this.scan();
    else this.timer ??= setTimeout(() => ((this.timer = undefined), this.scan()), wait).unref();
  }

  /** Opens every download file a box process has open that is not held yet. */
  scan(): void {
    this.lastScan = Date.now();
    const dev = this.opts.disk();
    if (this.closed || dev === undefined) return;
    for (const pid of this.opts.pids()) {
      let fds: string[];
      try {
        fds = readdirSync(`/proc/${pid}/fd`);
      } catch {
        continue;
      }
      for (const fd of fds) {
        if (this.held.size >= MAX_HELD) return;
        this.hold(`/proc/${pid}/fd/${fd}`, dev);
      }
    }
  }

  /** Lets go of the files the box has deleted (their space is then free). */
  releaseDeleted(): void {
    for (const [key, fd] of this.held) {
      let gone = true;
      try {
        gone = fstatSync(fd).nlink === 0;
      } catch {
        // an unreadable descriptor is let go
      }
      if (gone) {
        this.held.delete(key);
        closeSync(fd);
      }
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const fd of this.held.values()) closeSync(fd);
    this.held.clear();
  }

  private hold(link: string, dev: number): void {
    try {
      if (!readlinkSync(link).startsWith(`${this.opts.folder}/`)) return;
      const before = statSync(link);
      const key = `${before.dev}:${before.ino}`;
      // A file already deleted keeps its space while the box has it open: nothing to hold.
      if (!before.isFile() || before.dev !== dev || before.nlink === 0 || this.held.has(key)) return;
      const fd = openSync(link, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
      const now = fstatSync(fd);
      // The descriptor may have been closed and its number reused between the two looks.
      if (!now.isFile() || now.dev !== dev || now.ino !== before.ino || this.held.has(key)) closeSync(fd);
      else this.held.set(key, fd);
    } catch {
      // gone meanwhile, or not the service's to read: the poll still looks at the disk
    }
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
  private pids: readonly number[] = [];
  private diskDev: number | undefined;
  /** The box's download files, held open while its disk is looked at. */
  private readonly held = new HeldDownloads({
    folder: DOWNLOADS,
    pids: () => this.pids,
    disk: () => this.diskDev,
  });

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
    this.held.close();
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
      this.pids = pids;
      this.watchDownloads(inside);
      const full = this.diskFull(inside);
      if (full) return full;
      this.held.releaseDeleted();
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
      // The private disk is a mount point of the box's root, which the box cannot move or replace.
      this.diskDev = statSync(`/proc/${inside}/root/tmp`).dev;
      this.downloads = watch(`/proc/${inside}/root${DOWNLOADS}`, { persistent: false }, (_event, name) => {
        if (this.stopped) return;
        this.held.seen(name);
        const full = this.diskFull(inside);
        if (full) {
          this.stop();
          this.opts.onFull(full);
        } else this.held.releaseDeleted();
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
