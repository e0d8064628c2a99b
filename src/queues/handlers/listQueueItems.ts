import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listQueueItems as list } from '../items.js';
import { managedQueue } from './support.js';

/** GET /v1/queues/{queueId}/items — load order; a batchId of another queue matches nothing. */
export const listQueueItems: Handler<'listQueueItems'> = async (req, ctx) => {
  const q = await managedQueue(ctx, req.params.queueId);
  const { batchId, status } = req.query;
  return {
    status: 200,
    body: await list(ctx.services.db, ctx.services.blobs, q.id, { filter: { batchId, status }, page: pageOf(req) }),
  };
};
