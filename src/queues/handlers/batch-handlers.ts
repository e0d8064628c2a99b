import { guardBearerAuth } from '../../http/support.js';
import { createCsvUploadUrl } from './createCsvUploadUrl.js';
import { uploadCsvFile } from './uploadCsvFile.js';
import { createCsvBatch } from './createCsvBatch.js';
import { getQueueBatch } from './getQueueBatch.js';
import { cancelQueueBatch } from './cancelQueueBatch.js';
import { listBatchRowErrors } from './listBatchRowErrors.js';

/** The operations of openapi/queues.yaml (spec section 15, queue CSV batching). */
export const queueBatchHandlers = guardBearerAuth({
  createCsvUploadUrl,
  uploadCsvFile,
  createCsvBatch,
  getQueueBatch,
  cancelQueueBatch,
  listBatchRowErrors,
});
