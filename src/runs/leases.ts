/**
 * Lease renewal, once per worker process. Every run this process executes is held
 * here. Each period one UPDATE extends the leases of all of them (`renewLeases`), instead of a
 * timer and an UPDATE per run. A held run that the UPDATE did not extend is lost: it is no longer
 * RUNNING, or its lease expired and another worker claimed it after recovery. Its holder is told,
 * and aborts without finishing it (src/runs/recorder.ts). A run is held per attempt: when this
 * process claims a run again (its lease had expired here and recovery re-queued it), the older
 * attempt is lost, and releasing it later leaves the newer one held.
 */
import type { Logger } from '../config/logger.js';

export class LeaseKeeper {
  /** Held runs: the attempt held and what to call when it is lost. */
  private readonly held = new Map<string, { attempt: number; onLost: () => void }>();
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  /**
   * `renew` extends the leases of the given runs and answers the ids it extended; it is called
   * every `everyMs`, a third of the lease, so two renewals can fail before a lease expires.
   */
  constructor(
    private readonly renew: (runIds: string[]) => Promise<Set<string>>,
    private readonly everyMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.renewNow(), this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** `attempt` is the run's `attempts` as this claim left it: it tells claims of the same run apart. */
  hold(runId: string, attempt: number, onLost: () => void): void {
    const older = this.held.get(runId);
    this.held.set(runId, { attempt, onLost });
    if (older && older.attempt !== attempt) older.onLost();
  }

  release(runId: string, attempt: number): void {
    if (this.held.get(runId)?.attempt === attempt) this.held.delete(runId);
  }

  /** One renewal of every held lease; a renewal still under way is not doubled. */
  renewNow(): Promise<void> {
    this.renewing ??= this.renewHeld().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewHeld(): Promise<void> {
    const ids = [...this.held.keys()];
    if (ids.length === 0) return;
    let renewed: Set<string>;
    try {
      renewed = await this.renew(ids);
    } catch (err) {
      // The store is unavailable: the next period tries again (a lease outlives two periods).
      this.log.warn({ err, runs: ids.length }, 'lease renewal failed');
      return;
    }
    for (const id of ids) {
      if (renewed.has(id)) continue;
      const holder = this.held.get(id);
      // Released meanwhile: that run finished.
      if (!holder) continue;
      this.held.delete(id);
      holder.onLost();
    }
  }
}
