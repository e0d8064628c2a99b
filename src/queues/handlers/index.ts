import { guardBearerAuth } from '../../http/support.js';
import { listQueues } from './listQueues.js';
import { createQueue } from './createQueue.js';
import { getQueue } from './getQueue.js';
import { updateQueue } from './updateQueue.js';
import { deleteQueue } from './deleteQueue.js';
import { listQueueItems } from './listQueueItems.js';
import { listQueueBatches } from './listQueueBatches.js';

/** The queue operations of openapi/management.yaml (spec section 15). */
export const queueManagementHandlers = guardBearerAuth({
  listQueues,
  createQueue,
  getQueue,
  updateQueue,
  deleteQueue,
  listQueueItems,
  listQueueBatches,
});
export { queueBatchHandlers } from './batch-handlers.js';
