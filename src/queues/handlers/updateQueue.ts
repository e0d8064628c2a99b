import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { queueView, updateQueue as update } from '../queues.js';
import { checkQueueTrigger, managedQueue } from './support.js';

/**
 * PATCH /v1/queues/{queueId} — any subset of the settings; If-Match required (428 / 412).
 * Pausing only stops new runs (runs in flight finish); the dispatcher is woken so a resume,
 * a higher limit or a new priority takes effect at once.
 */
export const updateQueue: Handler<'updateQueue'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const { db } = ctx.services;
  // 404 before 400: an unknown queue is the first thing wrong with the request.
  await managedQueue(ctx, req.params.queueId);
  if (req.body.triggerId !== undefined) await checkQueueTrigger(db, ctx.auth.orgId, req.body.triggerId);
  const q = await update(db, ctx.auth.orgId, req.params.queueId, { expectedVersion: expected, patch: req.body });
  ctx.services.queues.wake();
  return { status: 200, body: queueView(q), headers: etag(q.version) };
};
