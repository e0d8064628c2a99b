/**
 * GET /v1/runs: the organisation's runs, newest first, filtered by workflow, trigger, status
 * and creation time (openapi/management.yaml `listRuns`). Every page is one statement over
 * indexes that end in `id` (015_run_listing_lean.ts), so a page reads about as many index
 * entries as it returns whatever the filter matches:
 *
 * - a status filter walks `(org_id, status, id)`;
 * - no filter: one walk of that index per status, merged;
 * - a workflow or trigger filter: the finished runs from a partial index
 *   `(org_id, workflow_id | trigger_id, id)`, merged with the organisation's PENDING and RUNNING
 *   runs from the status index (those are checked row by row, so a filter over an organisation
 *   with a large backlog reads up to its backlog).
 *
 * The partial indexes hold finished runs only, so accepting a run (a trigger call) writes no
 * index the listing added, and a run enters them once, when it finishes. Ids are UUIDv7 (their first 48 bits are the creation
 * millisecond), so a time window also narrows the id range of each walk.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { decodeCursor, encodeCursor, pageLimit, type Page, type PageRequest } from '../kernel/page.js';
import type { RunRow } from './runs.js';
import { isTerminal, RUN_STATUSES, type RunStatus } from './states.js';

/** The partial indexes' condition, written as they are (a literal: sqlite matches the term's text). */
const FINISHED = "status in ('COMPLETE', 'FAILED', 'TIMEOUT')";

const RUN_ID_PATTERN = /^run_[0-9a-f]{32}$/;
/** Slack between an id's millisecond and the row's `created_at` (the id is made first). */
const ID_TIME_SLACK_MS = 60_000;

export interface RunFilter {
  automationId?: string | undefined;
  triggerId?: string | undefined;
  status?: RunStatus | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
}

export interface RunSummary {
  runId: string;
  automationId: string;
  automationVersion: number;
  triggerId: string | null;
  status: RunStatus;
  startedBy: string;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** An ISO 8601 time as stored (`toISOString`), or 400 for a time the Date type cannot hold. */
function storedTime(name: string, value: string): Date {
  const d = new Date(value);
  if (Number.isNaN(d.getTime()))
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `${name} is not a valid date-time: ${JSON.stringify(value)}`,
    });
  return d;
}

/** The smallest run id made at `ms` (ids are `run_` + UUIDv7 hex). */
function idAt(ms: number): string {
  const clamped = Math.min(Math.max(0, ms), 0xffffffffffff);
  return `run_${clamped.toString(16).padStart(12, '0')}`;
}

const COLUMNS = [
  'id',
  'workflow_id',
  'workflow_version',
  'trigger_id',
  'status',
  'started_by',
  'error',
  'created_at',
  'started_at',
  'finished_at',
] as const;

type Row = Pick<RunRow, (typeof COLUMNS)[number]>;
type Narrow = (q: Knex.QueryBuilder) => void;

/** The walks whose merge is the listing, each narrowed to one index range. */
function walks(filter: RunFilter): Narrow[] {
  const { automationId, triggerId, status } = filter;
  const owner: Narrow = (q) => {
    if (triggerId !== undefined) q.andWhere({ trigger_id: triggerId });
    if (automationId !== undefined) q.andWhere({ workflow_id: automationId });
  };
  if (status !== undefined)
    return [
      (q) => {
        q.andWhere({ status });
        owner(q);
        if (isTerminal(status)) q.andWhereRaw(FINISHED);
      },
    ];
  if (automationId === undefined && triggerId === undefined)
    return RUN_STATUSES.map((s) => (q) => void q.andWhere({ status: s }));
  const unfinished = (['PENDING', 'RUNNING'] as const).map((s): Narrow => (q) => {
    q.andWhere({ status: s });
    owner(q);
  });
  return [
    (q) => {
      owner(q);
      q.andWhereRaw(FINISHED);
    },
    ...unfinished,
  ];
}

/**
 * The statement of one page: `limit + 1` rows (the last tells whether another page exists).
 * Exported for the tests that read its query plan.
 */
export function listRunsQuery(
  db: Knex,
  orgId: string,
  filter: RunFilter,
  page: PageRequest,
): { query: Knex.QueryBuilder; limit: number } {
  const limit = pageLimit(page.limit);
  const before = page.cursor === undefined ? undefined : decodeCursor('runs', page.cursor, 'string', RUN_ID_PATTERN);
  const after = filter.createdAfter === undefined ? undefined : storedTime('createdAfter', filter.createdAfter);
  const until = filter.createdBefore === undefined ? undefined : storedTime('createdBefore', filter.createdBefore);
  const walk = (narrow: Narrow) => {
    const q = db('runs')
      .select(...COLUMNS)
      .where({ org_id: orgId });
    narrow(q);
    if (after) {
      q.andWhere('created_at', '>=', after.toISOString());
      q.andWhere('id', '>=', idAt(after.getTime() - ID_TIME_SLACK_MS));
    }
    if (until) {
      q.andWhere('created_at', '<', until.toISOString());
      q.andWhere('id', '<', idAt(until.getTime() + ID_TIME_SLACK_MS));
    }
    if (before !== undefined) q.andWhere('id', '<', before);
    return q.orderBy('id', 'desc').limit(limit + 1);
  };
  const [first, ...others] = walks(filter).map(walk);
  if (others.length === 0) return { query: first!, limit };
  // One statement, so the walks read one snapshot: a run changing status between them is
  // neither listed twice nor missed.
  const query = db.select('*').from(first!.as('w0'));
  others.forEach((w, i) => query.unionAll(db.select('*').from(w.as(`w${i + 1}`))));
  return { query: query.orderBy('id', 'desc').limit(limit + 1), limit };
}

export async function listRuns(
  db: Knex,
  orgId: string,
  filter: RunFilter,
  page: PageRequest,
): Promise<Page<RunSummary>> {
  const { query, limit } = listRunsQuery(db, orgId, filter, page);
  const all = (await query) as Row[];
  const rows = all.slice(0, limit);
  const nextCursor = all.length > limit ? encodeCursor('runs', rows[rows.length - 1]!.id) : null;
  return {
    items: rows.map((r) => ({
      runId: r.id,
      automationId: r.workflow_id,
      automationVersion: Number(r.workflow_version),
      triggerId: r.trigger_id,
      status: r.status,
      startedBy: r.started_by ?? 'api_trigger',
      error: r.error,
      createdAt: r.created_at,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
    })),
    nextCursor,
  };
}
