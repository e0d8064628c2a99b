import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { findBatch, listRowErrors } from '../batches.js';
import { queueOf } from './queue-of.js';

/** GET /api/queues/{queueId}/batches/{batchId}/row-errors — skipped rows by row number, cursor paged. */
export const listBatchRowErrors: Handler<'listBatchRowErrors'> = async (req, ctx) => {
  const queue = await queueOf(ctx, req.params.queueId);
  const batch = await findBatch(ctx.services.db, queue.orgId, queue.id, req.params.batchId);
  if (!batch) throw new AppError('ERR_BATCH_NOT_FOUND');
  return {
    status: 200,
    body: await listRowErrors(ctx.services.db, batch.id, { limit: req.query.limit, cursor: req.query.cursor }),
  };
};
