import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listMembers } from '../members.js';
import { managedCollection } from './support.js';

/** GET /v1/collections/{collectionId}/items — vault items without content. */
export const listCollectionItems: Handler<'listCollectionItems'> = async (req, ctx) => {
  const c = await managedCollection(ctx, req.params.collectionId);
  return { status: 200, body: await listMembers(ctx.services.db, ctx.services.config, c, pageOf(req)) };
};
