/**
 * What the event handlers share: the org's collection with the resource API's 404, and the
 * item/file shape of the management list.
 */
import type { Services } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { findCollection, type CollectionRecord } from '../collections.js';

type Ctx = { services: Services; auth: { orgId: string } };

/**
 * Resource endpoints (openapi/resources.yaml): 404 collection_not_found; memoised per process
 * (EventsService.collection).
 */
export async function resourceCollection(ctx: Ctx, collectionId: string): Promise<CollectionRecord> {
  const found = await ctx.services.events.collection(ctx.auth.orgId, collectionId);
  if (!found) throw new AppError('ERR_COLLECTION_NOT_FOUND');
  return found;
}

/** Management endpoints (openapi/management.yaml): 404 not_found. */
export async function managedCollection(ctx: Ctx, collectionId: string): Promise<CollectionRecord> {
  const found = await findCollection(ctx.services.db, ctx.auth.orgId, collectionId);
  if (!found) throw new AppError('ERR_NOT_FOUND', { message: 'Collection not found' });
  return found;
}
