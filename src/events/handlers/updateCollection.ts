import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { collectionView, countItems, updateCollection as update } from '../collections.js';
import { managedCollection } from './support.js';

/** PATCH /v1/collections/{collectionId} — name and description; If-Match required (428 / 412). */
export const updateCollection: Handler<'updateCollection'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  await managedCollection(ctx, req.params.collectionId);
  const c = await update(ctx.services.db, ctx.auth.orgId, req.params.collectionId, {
    expectedVersion: expected,
    patch: req.body,
  });
  const counts = await countItems(ctx.services.db, [c.id]);
  return { status: 200, body: collectionView(c, counts.get(c.id) ?? 0), headers: etag(c.version) };
};
