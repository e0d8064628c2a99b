/** What the event handlers share: the org's collection with the resource API's 404, and the item/file shape of the management list. */
import type { Services } from '../../services.js';

type Ctx = { services: Services; auth: { orgId: string } };
import { AppError } from '../../errors/index.js';
import { findCollection, requireCollection, type CollectionRecord } from '../collections.js';

/** Resource endpoints (openapi/resources.yaml): 404 collection_not_found. */
export function resourceCollection(ctx: Ctx, collectionId: string): Promise<CollectionRecord> {
  return requireCollection(ctx.services.db, ctx.auth.orgId, collectionId);
}

/** Management endpoints (openapi/management.yaml): 404 not_found. */
export async function managedCollection(ctx: Ctx, collectionId: string): Promise<CollectionRecord> {
  const found = await findCollection(ctx.services.db, ctx.auth.orgId, collectionId);
  if (!found) throw new AppError('ERR_NOT_FOUND', { message: 'Collection not found' });
  return found;
}
