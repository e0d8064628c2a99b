import { notImplemented } from '../errors/index.js';
import type { OperationId, Handler } from './types.js';

/**
 * Operations described in openapi/ whose behaviour belongs to a later issue. Each answers the
 * typed 501 from the errors catalogue until its capability lands; the contract test holds the
 * same list and fails when the two disagree.
 */
export const pendingOperations: { readonly [K in OperationId]?: string } = {};

export function pendingHandlers(): { [K in OperationId]?: Handler<K> } {
  const out: Record<string, Handler<OperationId>> = {};
  for (const [id, capability] of Object.entries(pendingOperations) as [string, string][]) {
    out[id] = async () => {
      throw notImplemented(capability);
    };
  }
  return out as { [K in OperationId]?: Handler<K> };
}
