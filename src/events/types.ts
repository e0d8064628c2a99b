/**
 * Collection kinds (spec "Events": supported collections) and how each is named in event
 * payloads (`collectionType`: datastore, vault or filestorage).
 */
export type CollectionType =
  'structured_datastore' | 'unstructured_datastore' | 'filestore' | 'knowledge_base' | 'vault';
export const COLLECTION_TYPES: readonly CollectionType[] = [
  'structured_datastore',
  'unstructured_datastore',
  'filestore',
  'knowledge_base',
  'vault',
];

export type PayloadCollectionType = 'datastore' | 'vault' | 'filestorage';

export function payloadType(type: CollectionType): PayloadCollectionType {
  if (type === 'vault') return 'vault';
  return holdsFiles(type) ? 'filestorage' : 'datastore';
}

/** Filestores and knowledge bases hold files (`/filestorage/...`); the others hold items (`/memory/...`). */
export function holdsFiles(type: CollectionType): boolean {
  return type === 'filestore' || type === 'knowledge_base';
}

export const COLLECTION_ID_PATTERN = /^col_[0-9a-f]{32}$/;
export const ITEM_ID_PATTERN = /^item_[0-9a-f]{32}$/;
export const FILE_ITEM_ID_PATTERN = /^file_[0-9a-f]{32}$/;
/** Id of the (single, local) storage provider, the payloads' `providerId`. */
export const PROVIDER_ID = 'prv_switchyard';
