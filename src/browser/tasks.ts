/**
 * Browser task records (migration 007_browser_tasks; spec section 12 state table): RUNNING until
 * the task ends `completed` or `failed`. Every lookup is scoped to the organisation. The
 * process running a task renews its heartbeat; `expireStale` fails a RUNNING task whose
 * process stopped renewing or whose deadline has passed, so no task stays RUNNING for ever.
 */
import type { Knex } from 'knex';
import { nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';

export type TaskKind = 'script' | 'operator';
export type TaskStatus = 'RUNNING' | 'completed' | 'failed';

/** A saved file of a task: the file id in the collection and what the poll response shows. */
export interface TaskFile {
  fileId: string;
  fileName: string;
  mimeType: string;
  size: number;
  source: 'extract' | 'download' | 'script';
}

export interface TaskRecord {
  id: string;
  orgId: string;
  kind: TaskKind;
  status: TaskStatus;
  buildId: string;
  collectionId: string;
  logFileName: string;
  message: string;
  result: string | null;
  files: TaskFile[];
  log: string;
  heartbeatAt: string;
  deadlineAt: string;
  createdAt: string;
  finishedAt: string | null;
}

interface TaskRow {
  id: string;
  org_id: string;
  kind: TaskKind;
  status: TaskStatus;
  build_id: string;
  collection_id: string;
  log_file_name: string;
  message: string;
  result: string | null;
  files: string;
  log: string;
  heartbeat_at: string;
  deadline_at: string;
  created_at: string;
  finished_at: string | null;
}

function toRecord(r: TaskRow): TaskRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    kind: r.kind,
    status: r.status,
    buildId: r.build_id,
    collectionId: r.collection_id,
    logFileName: r.log_file_name,
    message: r.message,
    result: r.result,
    files: JSON.parse(r.files) as TaskFile[],
    log: r.log,
    heartbeatAt: r.heartbeat_at,
    deadlineAt: r.deadline_at,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

export async function insertTask(
  db: Knex,
  t: Pick<TaskRecord, 'id' | 'orgId' | 'kind' | 'buildId' | 'collectionId' | 'logFileName' | 'message' | 'deadlineAt'>,
): Promise<void> {
  const now = nowIso();
  await db('browser_tasks').insert({
    id: t.id,
    org_id: t.orgId,
    kind: t.kind,
    status: 'RUNNING',
    build_id: t.buildId,
    collection_id: t.collectionId,
    log_file_name: t.logFileName,
    message: t.message,
    result: null,
    files: '[]',
    log: '',
    heartbeat_at: now,
    deadline_at: t.deadlineAt,
    created_at: now,
    finished_at: null,
  });
}

export async function findTask(db: Knex, orgId: string, id: string): Promise<TaskRecord | undefined> {
  const row = (await db('browser_tasks').where({ org_id: orgId, id }).first()) as TaskRow | undefined;
  return row ? toRecord(row) : undefined;
}

/** While RUNNING: the heartbeat, the progress message and the log so far. */
export async function touchTask(db: Knex, id: string, progress: { message: string; log: string }): Promise<void> {
  await db('browser_tasks')
    .where({ id, status: 'RUNNING' })
    .update({ heartbeat_at: nowIso(), message: progress.message, log: progress.log });
}

/** Ends a RUNNING task; false when it had already ended (expired by a poll, say). */
export async function finishTask(
  db: Knex,
  id: string,
  end: { status: Exclude<TaskStatus, 'RUNNING'>; message: string; result: string; files: TaskFile[]; log: string },
): Promise<boolean> {
  const n = await db('browser_tasks')
    .where({ id, status: 'RUNNING' })
    .update({
      status: end.status,
      message: end.message,
      result: end.result,
      files: JSON.stringify(end.files),
      log: end.log,
      finished_at: nowIso(),
    });
  return n > 0;
}

/**
 * Fails RUNNING tasks whose process stopped renewing the heartbeat before `before`, or whose
 * deadline passed before it (the running process had its chance to end them). Scoped to one
 * task when `id` is given (a poll), else every organisation (the sweep).
 */
export async function expireStale(db: Knex, before: string, id?: string): Promise<number> {
  const q = db('browser_tasks')
    .where({ status: 'RUNNING' })
    .andWhere((w) => w.where('heartbeat_at', '<', before).orWhere('deadline_at', '<', before));
  if (id) q.andWhere({ id });
  return q.update({
    status: 'failed',
    message: 'Task failed.',
    result:
      'The task stopped without finishing: the process running it ended or stopped answering (the task will not resume; start it again).',
    finished_at: nowIso(),
  });
}

/**
 * Housekeeping: the records of tasks that ended before `before` (RUN_RETENTION_DAYS, as for
 * runs). Their files and logs stay in their collections, which belong to the organisation.
 */
export async function pruneFinished(db: Knex, before: string): Promise<number> {
  return db('browser_tasks').whereNot({ status: 'RUNNING' }).andWhere('finished_at', '<', before).delete();
}

const TASK_ID_PATTERN = /^ses_[0-9a-f]{32}$/;

/** One page of the organisation's tasks, newest first (ids are UUIDv7: id order is start order). */
export async function listTasks(db: Knex, orgId: string, page: PageRequest): Promise<Page<TaskRecord>> {
  const { rows, nextCursor } = await pageRows<TaskRow & Record<string, unknown>>(
    db('browser_tasks').where({ org_id: orgId }),
    { list: 'browser-tasks', column: 'id', keyPattern: TASK_ID_PATTERN, order: 'desc' },
    page,
  );
  return { items: rows.map(toRecord), nextCursor };
}
