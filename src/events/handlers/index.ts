import { guardBearerAuth } from '../../http/support.js';
import { createMemoryItem } from './createMemoryItem.js';
import { updateMemoryItem } from './updateMemoryItem.js';
import { replaceMemoryItem } from './replaceMemoryItem.js';
import { deleteMemoryItem } from './deleteMemoryItem.js';
import { uploadFilestorageItem } from './uploadFilestorageItem.js';
import { deleteFilestorageItem } from './deleteFilestorageItem.js';
import { updateDataCollection } from './updateDataCollection.js';
import { testDataCollectionTrigger } from './testDataCollectionTrigger.js';
import { testMemoryTrigger } from './testMemoryTrigger.js';
import { listCollections } from './listCollections.js';
import { createCollection } from './createCollection.js';
import { getCollection } from './getCollection.js';
import { updateCollection } from './updateCollection.js';
import { deleteCollection } from './deleteCollection.js';
import { listCollectionItems } from './listCollectionItems.js';
import { listCollectionDeliveries } from './listCollectionDeliveries.js';

/** The resource endpoints of openapi/resources.yaml (spec section 14). */
export const resourceHandlers = guardBearerAuth({
  createMemoryItem,
  updateMemoryItem,
  replaceMemoryItem,
  deleteMemoryItem,
  uploadFilestorageItem,
  deleteFilestorageItem,
  updateDataCollection,
  testDataCollectionTrigger,
  testMemoryTrigger,
});

/** The collection operations of openapi/management.yaml. */
export const collectionHandlers = guardBearerAuth({
  listCollections,
  createCollection,
  getCollection,
  updateCollection,
  deleteCollection,
  listCollectionItems,
  listCollectionDeliveries,
});
