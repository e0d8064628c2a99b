import type { Handler } from '../../services.js';
import { deleteItem } from '../items.js';
import { resourceCollection } from './support.js';

/** DELETE /memory/items/{id}?collectionId= — emits onDelete. */
export const deleteMemoryItem: Handler<'deleteMemoryItem'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.query.collectionId);
  await deleteItem(ctx.services.events.deps, collection, req.params.id);
  return { status: 204 };
};
