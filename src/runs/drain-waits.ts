/**
 * Shutdown of a process whose run-finished signals come through Redis: the synchronous callers
 * still waiting here once its own runs are done (src/app.ts `drain`). A caller whose run another
 * process is executing (RUNNING under a lease that has not expired) keeps waiting for that
 * process's signal; every other one (its run still PENDING, so nobody picked it up, or already
 * finished) gets its answer now, as without Redis: the timeout answer with the run headers to
 * poll, or the result. At `deadline` every wait still under way ends, and later ones end at once,
 * so the process exits within its grace.
 */
import type { Knex } from 'knex';
import type { Signals } from './signals.js';

/** How often the waiting callers' runs are read again while some run elsewhere. */
const POLL_MS = 200;
/** Run ids per read. */
const CHUNK = 500;

export interface DrainWaitsDeps {
  db: Knex;
  signals: Pick<Signals, 'waitingRuns' | 'endWaitsFor' | 'endWaits'>;
}

/** The runs among `runIds` that another process executes now (RUNNING, lease not expired). */
async function runningElsewhere(db: Knex, runIds: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  const now = Date.now();
  for (let i = 0; i < runIds.length; i += CHUNK) {
    const rows = (await db('runs')
      .select('id', 'lease_until')
      .whereIn('id', runIds.slice(i, i + CHUNK))
      .andWhere({ status: 'RUNNING' })) as { id: string; lease_until: string | Date | null }[];
    for (const r of rows) if (r.lease_until !== null && new Date(r.lease_until).getTime() > now) out.add(r.id);
  }
  return out;
}

export async function drainSyncWaits(deps: DrainWaitsDeps, { deadline }: { deadline: number }): Promise<void> {
  const { db, signals } = deps;
  try {
    for (;;) {
      const waiting = signals.waitingRuns();
      if (waiting.length === 0) return;
      const elsewhere = await runningElsewhere(db, waiting);
      signals.endWaitsFor(waiting.filter((id) => !elsewhere.has(id)));
      if (elsewhere.size === 0 || Date.now() + POLL_MS >= deadline) return;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    signals.endWaits();
  }
}
