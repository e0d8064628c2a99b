import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listQueues as list, queueView } from '../queues.js';

/** GET /v1/queues — oldest first. */
export const listQueues: Handler<'listQueues'> = async (req, ctx) => {
  const page = await list(ctx.services.db, ctx.auth.orgId, pageOf(req));
  return { status: 200, body: { items: page.items.map(queueView), nextCursor: page.nextCursor } };
};
