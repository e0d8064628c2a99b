import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { collectionView, countItems, listCollections as list } from '../collections.js';

/** GET /v1/collections — optional type filter. */
export const listCollections: Handler<'listCollections'> = async (req, ctx) => {
  const { db } = ctx.services;
  const page = await list(db, ctx.auth.orgId, { type: req.query.type }, pageOf(req));
  const counts = await countItems(
    db,
    page.items.map((c) => c.id),
  );
  return {
    status: 200,
    body: { items: page.items.map((c) => collectionView(c, counts.get(c.id) ?? 0)), nextCursor: page.nextCursor },
  };
};
