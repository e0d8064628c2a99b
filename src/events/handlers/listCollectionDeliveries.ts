import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listDeliveries } from '../outbox.js';
import { managedCollection } from './support.js';

/** GET /v1/collections/{collectionId}/deliveries — the delivery log: sent, failed, dropped, pending. */
export const listCollectionDeliveries: Handler<'listCollectionDeliveries'> = async (req, ctx) => {
  const c = await managedCollection(ctx, req.params.collectionId);
  const { status, event, itemId } = req.query;
  return { status: 200, body: await listDeliveries(ctx.services.db, c.id, { status, event, itemId }, pageOf(req)) };
};
