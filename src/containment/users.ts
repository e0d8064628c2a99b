/**
 * Unprivileged users for contained processes when the service runs as root (README.md
 * "Process layer"). Each live process gets a user id of its own from a block no account uses,
 * so no two processes share a user: RLIMIT_NPROC then bounds each one's processes and threads,
 * and none may signal or trace another even where they share a namespace. A service that does
 * not run as root cannot switch users; its runners keep its own (unprivileged) user.
 *
 * "No two processes" holds across the machine, not only within one service process: the
 * service, its workers and a restarted service on one host draw from the same block, so an id is
 * claimed host-wide by a lock file (`/run/switchyard-runner-uids/<uid>`, or under the temporary
 * folder where /run is not writable; mode 0600, holding the claiming service's pid) in a folder
 * that must belong to the service's user and be writable by it alone (anything else, a symbolic
 * link included, is refused: no id is handed out). A lock whose process is gone (a service that
 * was killed) is taken over.
 */
import { accessSync, constants, lstatSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The block: far above the ids that accounts, subordinate id ranges and systemd's dynamic users take. */
export const RUNNER_UID_BASE = 1_900_000_000;
export const RUNNER_UID_COUNT = 1_000_000;

export interface RunnerUsersOptions {
  base?: number;
  count?: number;
  /** Where the host-wide claims are kept (default `/run/switchyard-runner-uids`, else under the temporary folder). */
  lockDir?: string;
}

function defaultLockDir(): string {
  try {
    accessSync('/run', constants.W_OK);
    return '/run/switchyard-runner-uids';
  } catch {
    return path.join(os.tmpdir(), 'switchyard-runner-uids');
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class RunnerUsers {
  private readonly live = new Set<number>();
  private readonly base: number;
  private readonly count: number;
  private readonly lockDir: string;
  /** Where this process starts looking: spread, so that processes on one host rarely meet. */
  private next: number;
  private lockDirReady = false;

  constructor(opts: RunnerUsersOptions = {}) {
    this.base = opts.base ?? RUNNER_UID_BASE;
    this.count = opts.count ?? RUNNER_UID_COUNT;
    this.lockDir = opts.lockDir ?? defaultLockDir();
    this.next = Math.floor(Math.random() * this.count);
  }

  /** A user id no live process of this service, nor of another service on this host, has. */
  take(): number {
    if (this.live.size >= this.count) throw new Error('No free runner user id');
    for (let tried = 0; tried < this.count; tried++) {
      const uid = this.base + this.next;
      this.next = (this.next + 1) % this.count;
      if (!this.live.has(uid) && this.claim(uid)) {
        this.live.add(uid);
        return uid;
      }
    }
    throw new Error('No free runner user id');
  }

  /** The id is free again once its process has exited. */
  give(uid: number | undefined): void {
    if (uid === undefined || !this.live.delete(uid)) return;
    try {
      if (readFileSync(this.lockFile(uid), 'utf8') === String(process.pid)) unlinkSync(this.lockFile(uid));
    } catch {
      // already gone
    }
  }

  /** The block, for the startup log. */
  describe(): string {
    return `${this.base}–${this.base + this.count - 1}, one per process`;
  }

  private lockFile(uid: number): string {
    return path.join(this.lockDir, String(uid));
  }

  /** Claims `uid` host-wide: its lock file is created, or taken over from a process that is gone. */
  private claim(uid: number): boolean {
    if (!this.lockDirReady) {
      mkdirSync(this.lockDir, { recursive: true, mode: 0o700 });
      const st = lstatSync(this.lockDir);
      if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) {
        throw new Error(
          `${this.lockDir} must be a folder of this user that no one else may write: runner user ids are not handed out`,
        );
      }
      this.lockDirReady = true;
    }
    const file = this.lockFile(uid);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let holder: number;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        continue; // released meanwhile: try again
      }
      if (holder === process.pid || (Number.isInteger(holder) && holder > 0 && alive(holder))) return false;
      try {
        unlinkSync(file); // its service is gone
      } catch {
        // another process took it over first
      }
    }
    return false;
  }
}

/** The one block of this process: runners of every app in it take their ids here. */
export const runnerUsers = new RunnerUsers();
