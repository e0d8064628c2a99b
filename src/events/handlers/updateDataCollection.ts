import type { Handler } from '../../services.js';
import { dataCollectionView, setCollectionTriggerUrls } from '../collections.js';
import { normalizeTriggerUrls } from '../trigger-urls.js';
import { resourceCollection } from './support.js';

/** PATCH /datacollection/{collectionId} — replaces the collection-level trigger URLs. */
export const updateDataCollection: Handler<'updateDataCollection'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.params.collectionId);
  const { deps } = ctx.services.events;
  const entries = normalizeTriggerUrls(req.body.triggerUrls, {
    level: 'collection',
    collectionType: collection.type,
    secretKey: deps.secretKey,
    addresses: deps.addresses,
  });
  const updated = await setCollectionTriggerUrls(ctx.services.db, ctx.auth.orgId, collection.id, entries);
  return { status: 200, body: dataCollectionView(updated) };
};
