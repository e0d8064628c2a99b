import type { Handler } from '../../services.js';
import { updateItem } from '../items.js';
import { resourceCollection } from './support.js';

/**
 * PUT /memory/items/{id}?collectionId= — replaces content and metadata; emits onEdit unless triggerChanges is false.
 */
export const replaceMemoryItem: Handler<'replaceMemoryItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  return {
    status: 200,
    body: await updateItem(ctx.services.events.deps, collection, req.params.id, { body: req.body, mode: 'replace' }),
  };
};
