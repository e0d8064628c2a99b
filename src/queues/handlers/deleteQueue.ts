import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteQueue as remove } from '../queues.js';

/** DELETE /v1/queues/{queueId} — uploads, batches, items and row errors go with it; runs stay; If-Match optional. */
export const deleteQueue: Handler<'deleteQueue'> = async (req, ctx) => {
  const { db, blobs } = ctx.services;
  const blobKeys = await remove(db, ctx.auth.orgId, req.params.queueId, parseIfMatch(req));
  if (!blobKeys) throw new AppError('ERR_NOT_FOUND', { message: 'Queue not found' });
  // The rows are gone (committed): a file that cannot be removed now is only unreachable bytes,
  // not a reason to answer 500 for a delete that happened.
  for (const key of blobKeys) {
    try {
      await blobs.delete(key);
    } catch (err) {
      ctx.log.warn({ err, key }, 'deleteQueue: a stored CSV upload could not be removed');
    }
  }
  return { status: 204 };
};
