/**
 * Unprivileged users for contained processes when the service runs as root (README.md
 * "Process layer"). Each live process gets a user id of its own from a block no account uses,
 * so no two processes share a user: RLIMIT_NPROC then bounds each one's processes and threads,
 * and none may signal or trace another even where they share a namespace. A service that does
 * not run as root cannot switch users; its runners keep its own (unprivileged) user.
 */

/** The block: far above the ids that accounts, subordinate id ranges and systemd's dynamic users take. */
export const RUNNER_UID_BASE = 1_900_000_000;
export const RUNNER_UID_COUNT = 1_000_000;

export class RunnerUsers {
  private readonly live = new Set<number>();
  private next = 0;

  constructor(
    private readonly base = RUNNER_UID_BASE,
    private readonly count = RUNNER_UID_COUNT,
  ) {}

  /** A user id no live process of this service has. */
  take(): number {
    if (this.live.size >= this.count) throw new Error('No free runner user id');
    for (;;) {
      const uid = this.base + this.next;
      this.next = (this.next + 1) % this.count;
      if (!this.live.has(uid)) {
        this.live.add(uid);
        return uid;
      }
    }
  }

  /** The id is free again once its process has exited. */
  give(uid: number | undefined): void {
    if (uid !== undefined) this.live.delete(uid);
  }

  /** The block, for the startup log. */
  describe(): string {
    return `${this.base}–${this.base + this.count - 1}, one per process`;
  }
}

/** The one block of this process: runners of every app in it take their ids here. */
export const runnerUsers = new RunnerUsers();
