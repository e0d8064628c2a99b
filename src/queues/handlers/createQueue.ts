import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createQueue as create, queueView } from '../queues.js';
import { checkQueueTrigger } from './support.js';

/**
 * POST /v1/queues — omitted settings take QUEUE_DEFAULTS; the trigger must be a workflow trigger of
 * the org (400 invalid_trigger).
 */
export const createQueue: Handler<'createQueue'> = async (req, ctx) => {
  const { db } = ctx.services;
  await checkQueueTrigger(db, ctx.auth.orgId, req.body.triggerId);
  const created = await create(db, ctx.auth.orgId, req.body);
  // Every settings change wakes the dispatcher (QueuesService), creation included.
  ctx.services.queues.wake();
  return { status: 201, body: queueView(created), headers: etag(created.version) };
};
