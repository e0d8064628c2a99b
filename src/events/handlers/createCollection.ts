import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { collectionView, createCollection as create } from '../collections.js';
import { normalizeTriggerUrls } from '../trigger-urls.js';

/** POST /v1/collections — trigger URLs, when given, are collection level. */
export const createCollection: Handler<'createCollection'> = async (req, ctx) => {
  const { deps } = ctx.services.events;
  const { name, description, type, triggerUrls } = req.body;
  const entries = normalizeTriggerUrls(triggerUrls ?? [], {
    level: 'collection',
    collectionType: type,
    secretKey: deps.secretKey,
    addresses: deps.addresses,
  });
  const created = await create(ctx.services.db, ctx.auth.orgId, { name, description, type, triggerUrls: entries });
  return { status: 201, body: collectionView(created, 0), headers: etag(created.version) };
};
