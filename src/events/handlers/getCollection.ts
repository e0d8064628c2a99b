import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { collectionView, countItems } from '../collections.js';
import { managedCollection } from './support.js';

/** GET /v1/collections/{collectionId}. */
export const getCollection: Handler<'getCollection'> = async (req, ctx) => {
  const c = await managedCollection(ctx, req.params.collectionId);
  const counts = await countItems(ctx.services.db, [c.id]);
  return { status: 200, body: collectionView(c, counts.get(c.id) ?? 0), headers: etag(c.version) };
};
