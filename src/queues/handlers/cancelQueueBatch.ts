import type { Handler } from '../../services.js';
import { batchViews } from '../batches.js';
import { cancelBatch } from '../create-batch.js';
import { queueOf } from './queue-of.js';

/** POST /api/queues/{queueId}/batches/{batchId}/cancel — stops loading and dispatch; running runs finish. */
export const cancelQueueBatch: Handler<'cancelQueueBatch'> = async (req, ctx) => {
  const queue = await queueOf(ctx, req.params.queueId);
  const batch = await cancelBatch(ctx.services.db, queue.orgId, queue.id, req.params.batchId);
  return { status: 200, body: (await batchViews(ctx.services.db, [batch]))[0]! };
};
