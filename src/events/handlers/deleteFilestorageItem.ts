import type { Handler } from '../../services.js';
import { deleteFile } from '../files.js';
import { resourceCollection } from './support.js';

/** DELETE /filestorage/items/{id}?collectionId= — emits onDelete; the file's signed URLs stop working. */
export const deleteFilestorageItem: Handler<'deleteFilestorageItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  await deleteFile(ctx.services.events.deps, collection, req.params.id);
  return { status: 204 };
};
