/**
 * The queues context's public surface (DESIGN.md section 3 `queues/`): queues, CSV batches and
 * their rows, the queues service (loader and dispatcher), the run queue backends, and the HTTP
 * handlers.
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
