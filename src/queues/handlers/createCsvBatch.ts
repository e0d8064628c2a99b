import type { Handler } from '../../services.js';
import { batchViews } from '../batches.js';
import { createBatch } from '../create-batch.js';
import { queueOf } from './queue-of.js';

/** POST /api/queues/{queueId}/items/csv — validates the upload, answers 202; rows load in the background. */
export const createCsvBatch: Handler<'createCsvBatch'> = async (req, ctx) => {
  const queue = await queueOf(ctx, req.params.queueId);
  const { db, blobs, callTargets } = ctx.services;
  const batch = await createBatch({ db, blobs, callTargets }, queue, req.body);
  ctx.services.queues.wake();
  return { status: 202, body: (await batchViews(db, [batch]))[0]! };
};
