/**
 * Graceful shutdown of a process on SIGTERM or SIGINT (README "Running in production"), for the
 * service (main.ts) and the worker (worker.ts): at the first signal `atSignal` runs at once and
 * then `drain`; once it resolves the process exits 0. SHUTDOWN_GRACE_MS after the signal, at a
 * second signal, or when `drain` fails, it exits 1 at once: the runs it still executed are
 * recovered when their leases expire, as after a crash.
 */
import type { Logger } from './config/logger.js';

export interface ShutdownOptions {
  log: Logger;
  graceMs: number;
  /** Logged at the first signal. */
  message: string;
  /** Runs at once at the first signal, before `drain` (the HTTP drain's `Connection: close`). */
  atSignal?: () => void;
  /** Stops taking work, waits for the work under way, releases everything. */
  drain: () => Promise<void>;
}

export function shutDownOnSignals(opts: ShutdownOptions): void {
  const { log, graceMs } = opts;
  let signalled = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal while shutting down: exiting now');
      process.exit(1);
    }
    signalled = true;
    log.info({ signal, graceMs }, opts.message);
    const force = setTimeout(() => {
      log.error({ graceMs }, 'shutdown grace ran out: exiting now');
      process.exit(1);
    }, graceMs);
    force.unref();
    opts.atSignal?.();
    opts.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
