import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listBatches } from '../batches.js';
import { managedQueue } from './support.js';

/** GET /v1/queues/{queueId}/batches — oldest first, in the QueueBatch shape of getQueueBatch. */
export const listQueueBatches: Handler<'listQueueBatches'> = async (req, ctx) => {
  const q = await managedQueue(ctx, req.params.queueId);
  return { status: 200, body: await listBatches(ctx.services.db, ctx.auth.orgId, q.id, pageOf(req)) };
};
