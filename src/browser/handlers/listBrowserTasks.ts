import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listTaskSummaries } from '../task-views.js';

/** GET /v1/browser-tasks — the organisation's browser tasks, newest first. */
export const listBrowserTasks: Handler<'listBrowserTasks'> = async (req, ctx) => {
  return { status: 200, body: await listTaskSummaries(ctx.services.db, ctx.auth.orgId, pageOf(req)) };
};
