import type { Handler } from '../../services.js';
import { taskView } from '../task-views.js';

/** GET /v1/browser-tasks/{sessionId} — one task with its result, log and files. */
export const getBrowserTask: Handler<'getBrowserTask'> = async (req, ctx) => {
  const body = await taskView(ctx.services.db, ctx.services.config, {
    orgId: ctx.auth.orgId,
    id: req.params.sessionId,
  });
  return { status: 200, body, headers: { 'Cache-Control': 'no-store' } };
};
