import type { Handler } from '../../services.js';
import { createUploadUrl } from '../uploads.js';
import { queueOf } from './queue-of.js';

/** POST /api/queues/{queueId}/items/csv/upload-url — a presigned PUT target (spec section 15). */
export const createCsvUploadUrl: Handler<'createCsvUploadUrl'> = async (req, ctx) => {
  const queue = await queueOf(ctx, req.params.queueId);
  return { status: 200, body: await createUploadUrl(ctx.services.db, ctx.services.config, queue, { input: req.body }) };
};
