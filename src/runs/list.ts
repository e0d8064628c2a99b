/**
 * GET /v1/runs: the organisation's runs, newest first, filtered by workflow, trigger, status
 * and creation time (openapi/management.yaml `listRuns`). Unfiltered, the walk uses
 * `(org_id, id)`; a workflow, trigger or status filter has an index of its own ending in `id`
 * (014_run_listing_indexes.ts), so a filter matching few runs does not read the organisation's
 * other runs. Ids are UUIDv7 (their first 48 bits are the creation millisecond), so a time
 * window also narrows the id range the walk covers.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import type { RunRow } from './runs.js';
import type { RunStatus } from './states.js';

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

export async function listRuns(
  db: Knex,
  orgId: string,
  filter: RunFilter,
  page: PageRequest,
): Promise<Page<RunSummary>> {
  const q = db('runs')
    .select(...COLUMNS)
    .where({ org_id: orgId });
  if (filter.automationId !== undefined) q.andWhere({ workflow_id: filter.automationId });
  if (filter.triggerId !== undefined) q.andWhere({ trigger_id: filter.triggerId });
  if (filter.status !== undefined) q.andWhere({ status: filter.status });
  if (filter.createdAfter !== undefined) {
    const after = storedTime('createdAfter', filter.createdAfter);
    q.andWhere('created_at', '>=', after.toISOString()).andWhere('id', '>=', idAt(after.getTime() - ID_TIME_SLACK_MS));
  }
  if (filter.createdBefore !== undefined) {
    const before = storedTime('createdBefore', filter.createdBefore);
    q.andWhere('created_at', '<', before.toISOString()).andWhere('id', '<', idAt(before.getTime() + ID_TIME_SLACK_MS));
  }
  type Row = Pick<RunRow, (typeof COLUMNS)[number]> & Record<string, unknown>;
  const { rows, nextCursor } = await pageRows<Row>(
    q,
    { list: 'runs', column: 'id', keyPattern: RUN_ID_PATTERN, order: 'desc' },
    page,
  );
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
