/**
 * Browser tasks as the management API shows them (openapi/management.yaml `listBrowserTasks`,
 * `getBrowserTask`): the summary of each task, and one task with its result, log and files
 * with signed URLs, as the `..._run_continue` poll answers them.
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { BROWSER_FILE_URL_TTL_SECONDS, signFileUrl } from '../files/index.js';
import type { Page, PageRequest } from '../kernel/page.js';
import { STALE_MS } from './service.js';
import { expireStale, findTask, listTasks, type TaskRecord } from './tasks.js';

function summary(t: TaskRecord) {
  return {
    sessionId: t.id,
    kind: t.kind,
    status: t.status,
    message: t.message,
    collectionId: t.collectionId,
    logFileName: t.logFileName,
    fileCount: t.files.length,
    createdAt: t.createdAt,
    finishedAt: t.finishedAt,
  };
}

export type TaskSummary = ReturnType<typeof summary>;

export async function listTaskSummaries(db: Knex, orgId: string, page: PageRequest): Promise<Page<TaskSummary>> {
  const { items, nextCursor } = await listTasks(db, orgId, page);
  return { items: items.map(summary), nextCursor };
}

/** One task; a RUNNING task whose process stopped renewing its heartbeat is failed first, as a poll does. */
export async function taskView(db: Knex, config: Config, { orgId, id }: { orgId: string; id: string }) {
  let task = await findTask(db, orgId, id);
  if (!task) throw new AppError('ERR_NOT_FOUND');
  if (task.status === 'RUNNING' && (await expireStale(db, new Date(Date.now() - STALE_MS).toISOString(), id)) > 0)
    task = (await findTask(db, orgId, id)) ?? task;
  return {
    ...summary(task),
    buildId: task.buildId,
    result: task.result,
    log: task.log,
    files: task.files.map((f) => ({
      url: signFileUrl(config, f.fileId, BROWSER_FILE_URL_TTL_SECONDS),
      fileName: f.fileName,
      mimeType: f.mimeType,
      size: f.size,
      source: f.source,
    })),
  };
}
