import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteFiles } from '../../files/index.js';
import { deleteCollection as remove } from '../collections.js';

/** DELETE /v1/collections/{collectionId} — items, files and the delivery log go with it; If-Match optional. */
export const deleteCollection: Handler<'deleteCollection'> = async (req, ctx) => {
  const { db, blobs } = ctx.services;
  const fileIds = await remove(db, ctx.auth.orgId, req.params.collectionId, parseIfMatch(req));
  if (!fileIds) throw new AppError('ERR_NOT_FOUND', { message: 'Collection not found' });
  if (fileIds.length > 0) await deleteFiles(db, blobs, ctx.auth.orgId, fileIds);
  return { status: 204 };
};
