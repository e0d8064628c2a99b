/** The events context: collections, items, files, trigger URLs, outbox dispatcher, rate windows. */
export { EventsService, type EventsOptions, type CallResult } from './service.js';
export { createCollection, findCollection, type CollectionRecord } from './collections.js';
export { createItem } from './items.js';
export { addFile } from './files.js';
export type { AddressCheck } from './trigger-urls.js';
export type { Poster, PostResult } from './dispatcher.js';
export { COLLECTION_TYPES, type CollectionType } from './types.js';
export { eventCalls, threadPoster } from './outbound.js';
export { holdsFiles } from './types.js';
export {
  collectionView,
  collectionSummaries,
  collectionsStamp,
  countItems,
  deleteCollection,
  listCollections,
} from './collections.js';
export { outboxBacklog } from './outbox.js';
