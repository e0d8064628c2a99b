import type { Handler } from '../../services.js';
import { createItem } from '../items.js';
import { resourceCollection } from './support.js';

/** POST /memory/items?collectionId= — emits onCreate to the collection-level URLs. */
export const createMemoryItem: Handler<'createMemoryItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  return { status: 201, body: await createItem(ctx.services.events.deps, collection, req.body) };
};
