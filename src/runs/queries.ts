/**
 * What other contexts ask of the tables runs owns (`runs`, `files`; src/storage/tables.ts), so
 * that no other context names them in SQL: the queue's dispatcher and batch views filter and
 * read the status of the runs their items started, a batch cancel fails the runs still
 * waiting, and a chat lists the files it produced.
 *
 * `runStatusIn` and `runStatusOf` return subqueries correlated with the caller's column of run
 * ids (`qi.run_id`): the store looks each run up by its primary key, as a join would, and the
 * column names of `runs` stay here.
 */
import type { Knex } from 'knex';
import type { RunStatus } from './states.js';

/** For `.whereExists(...)`: the run named by `runIdColumn` is in one of `statuses`. */
export function runStatusIn(db: Knex, runIdColumn: string, statuses: readonly RunStatus[]): Knex.QueryBuilder {
  return db('runs').select(db.raw('1')).whereRaw('runs.id = ??', [runIdColumn]).whereIn('runs.status', statuses);
}

/** For `.select(runStatusOf(db, 'qi.run_id').as('run_status'))`: the status of the run named by `runIdColumn`. */
export function runStatusOf(db: Knex, runIdColumn: string): Knex.QueryBuilder {
  return db('runs').select('runs.status').whereRaw('runs.id = ??', [runIdColumn]).limit(1);
}

/**
 * Fails the runs among `runIds` that are still PENDING (a worker may claim one meanwhile: only
 * the runs this UPDATE moves are failed); returns their ids. At most 500 ids per call.
 */
export async function failPendingRuns(
  db: Knex,
  runIds: readonly string[],
  outcome: { error: string; finishedAt: string },
): Promise<string[]> {
  if (runIds.length === 0) return [];
  if (runIds.length > 500) throw new RangeError('failPendingRuns takes at most 500 run ids per call');
  const moved = (await db('runs')
    .whereIn('id', runIds)
    .where({ status: 'PENDING' })
    .update({ status: 'FAILED', finished_at: outcome.finishedAt, error: outcome.error })
    .returning('id')) as ({ id: string } | string)[];
  return moved.map((m) => (typeof m === 'string' ? m : m.id));
}
