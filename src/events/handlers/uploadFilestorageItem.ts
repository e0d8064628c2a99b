import type { Handler } from '../../services.js';
import { uploadFile } from '../files.js';
import { resourceCollection } from './support.js';

/** POST /filestorage/items/upload?collectionId= — multipart, streamed to the blob store; emits onCreate. */
export const uploadFilestorageItem: Handler<'uploadFilestorageItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  return { status: 201, body: await uploadFile(ctx.services.events.deps, collection, req.raw) };
};
