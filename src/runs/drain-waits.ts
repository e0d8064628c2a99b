/**
 * Shutdown of a process whose run-finished signals come through Redis: the synchronous callers
 * still waiting here once its own runs are done (src/app.ts `drain`).
 * - A caller whose run another process executes (RUNNING under a lease that has not expired)
 *   keeps waiting for that process's signal.
 * - A caller whose run is still queued (PENDING) keeps waiting while other processes execute
 *   runs (one of them will take it); when none has for QUIET_MS, nobody picks it up, and it gets
 *   its answer then, as without Redis: the timeout answer with the run headers to poll.
 * - Any other caller (its run finished, or left under an expired lease) gets its answer now.
 * At `deadline` every wait still under way ends, and later ones end at once, so the process
 * exits within its grace.
 */
import type { Knex } from 'knex';
import type { Signals } from './signals.js';

/** How often the waiting callers' runs are read again while some wait on other processes. */
const POLL_MS = 200;
/**
 * How long no process may be seen executing a run before nobody is taken to pick queued runs
 * up: a worker that finishes a run claims the next one within this time.
 */
const QUIET_MS = 1_000;
/** Run ids per read. */
const CHUNK = 500;

export interface DrainWaitsDeps {
  db: Knex;
  signals: Pick<Signals, 'waitingRuns' | 'endWaitsFor' | 'endWaits'>;
}

/** The runs among `runIds` still queued, and those another process executes now (RUNNING, lease ahead). */
async function states(db: Knex, runIds: string[]): Promise<{ pending: Set<string>; elsewhere: Set<string> }> {
  const pending = new Set<string>();
  const elsewhere = new Set<string>();
  const now = new Date().toISOString();
  for (let i = 0; i < runIds.length; i += CHUNK) {
    const rows = (await db('runs')
      .select('id', 'status', 'lease_until')
      .whereIn('id', runIds.slice(i, i + CHUNK))
      .whereIn('status', ['PENDING', 'RUNNING'])) as { id: string; status: string; lease_until: string | null }[];
    for (const r of rows) {
      if (r.status === 'PENDING') pending.add(r.id);
      else if (r.lease_until !== null && r.lease_until > now) elsewhere.add(r.id);
    }
  }
  return { pending, elsewhere };
}

/** Whether any process executes a run now (this one has finished its own): one that could take a queued run. */
async function othersExecute(db: Knex): Promise<boolean> {
  const row: unknown = await db('runs')
    .where({ status: 'RUNNING' })
    .andWhere('lease_until', '>', new Date().toISOString())
    .first('id');
  return row !== undefined;
}

export async function drainSyncWaits(deps: DrainWaitsDeps, { deadline }: { deadline: number }): Promise<void> {
  const { db, signals } = deps;
  let quietSince: number | undefined;
  try {
    for (;;) {
      const waiting = signals.waitingRuns();
      if (waiting.length === 0) return;
      const { pending, elsewhere } = await states(db, waiting);
      let queuedWait = false;
      if (pending.size > 0) {
        if (elsewhere.size > 0 || (await othersExecute(db))) quietSince = undefined;
        else quietSince ??= Date.now();
        queuedWait = quietSince === undefined || Date.now() - quietSince < QUIET_MS;
      }
      const keep = (id: string) => elsewhere.has(id) || (queuedWait && pending.has(id));
      signals.endWaitsFor(waiting.filter((id) => !keep(id)));
      if (!waiting.some(keep) || Date.now() + POLL_MS >= deadline) return;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    signals.endWaits();
  }
}
