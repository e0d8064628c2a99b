/** The events context: collections, items, files, trigger URLs, outbox dispatcher, rate windows. */
export { EventsService, type EventsOptions, type CallResult } from './service.js';
export { resourceHandlers, collectionHandlers } from './handlers/index.js';
export { createCollection, findCollection, type CollectionRecord } from './collections.js';
export { createItem } from './items.js';
export { addFile } from './files.js';
export type { AddressCheck } from './trigger-urls.js';
export type { Poster, PostResult } from './dispatcher.js';
export { COLLECTION_TYPES, type CollectionType } from './types.js';
export { eventCalls, threadPoster } from './outbound.js';
