/**
 * The queues context's public surface: queues, CSV batches and their rows, the queues service
 * (loader and dispatcher). The run queue they put runs on is the runs context's. Its HTTP handlers are in
 * handlers/index.ts, for the composition root.
 */
export { QueuesService } from './service.js';
export {
  createQueue,
  checkQueueSettings,
  deleteQueue,
  findQueue,
  listQueues,
  queueView,
  updateQueue,
  type QueuePatch,
  type QueueRecord,
} from './queues.js';
export { findBatch, listBatches, listRowErrors } from './batches.js';
export { ITEM_STATUSES, listQueueItems, type ItemStatus } from './items.js';
export { liveBatchCounts } from './batches.js';
