import type { Handler } from '../../services.js';
import { updateItem } from '../items.js';
import { resourceCollection } from './support.js';

/** PATCH /memory/items/{id}?collectionId= — JSON Merge Patch; emits onEdit unless triggerChanges is false. */
export const updateMemoryItem: Handler<'updateMemoryItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  return {
    status: 200,
    body: await updateItem(ctx.services.events.deps, collection, req.params.id, { body: req.body, mode: 'merge' }),
  };
};
