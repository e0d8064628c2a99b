import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { queueView } from '../queues.js';
import { managedQueue } from './support.js';

/** GET /v1/queues/{queueId}. */
export const getQueue: Handler<'getQueue'> = async (req, ctx) => {
  const q = await managedQueue(ctx, req.params.queueId);
  return { status: 200, body: queueView(q), headers: etag(q.version) };
};
