import type { Handler } from '../../services.js';
import { getBatchView } from '../batches.js';
import { queueOf } from './queue-of.js';

/** GET /api/queues/{queueId}/batches/{batchId} — the batch and its progress counters. */
export const getQueueBatch: Handler<'getQueueBatch'> = async (req, ctx) => {
  const queue = await queueOf(ctx, req.params.queueId);
  return { status: 200, body: await getBatchView(ctx.services.db, queue.orgId, queue.id, req.params.batchId) };
};
