/**
 * The queues context's public surface: queues, CSV batches and their rows, the queues service
 * (loader and dispatcher) and the run queue backends. Its HTTP handlers are in
 * handlers/index.ts, for the composition root.
 */
export { InProcessRunQueue, RedisRunQueue, type RunQueue } from './run-queue.js';
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
