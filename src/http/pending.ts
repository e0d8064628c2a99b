import { notImplemented } from '../errors/index.js';
import type { OperationId, Handler } from './types.js';

/**
 * Operations described in openapi/ whose behaviour belongs to a later issue. Each answers the
 * typed 501 from the errors catalogue until its capability lands; the contract test holds the
 * same list and fails when the two disagree.
 */
export const pendingOperations = {
  createCsvUploadUrl: 'queue CSV batching',
  uploadCsvFile: 'queue CSV batching',
  createCsvBatch: 'queue CSV batching',
  getQueueBatch: 'queue CSV batching',
  cancelQueueBatch: 'queue CSV batching',
  listBatchRowErrors: 'queue CSV batching',
} as const satisfies PartialHandlerMapKeys;

type PartialHandlerMapKeys = { [K in OperationId]?: string };

export type PendingOperationId = keyof typeof pendingOperations;

export function pendingHandlers(): { [K in PendingOperationId]: Handler<K> } {
  const out: Record<string, Handler<OperationId>> = {};
  for (const [id, capability] of Object.entries(pendingOperations)) {
    out[id] = async () => {
      throw notImplemented(capability);
    };
  }
  return out as { [K in PendingOperationId]: Handler<K> };
}
