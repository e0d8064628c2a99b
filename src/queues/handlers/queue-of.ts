/** The queue of the token's organisation for the endpoints of openapi/queues.yaml: 404 queue_not_found. */
import type { Services } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { findQueue, type QueueRecord } from '../queues.js';

export async function queueOf(
  ctx: { services: Services; auth: { orgId: string } },
  queueId: string,
): Promise<QueueRecord> {
  const queue = await findQueue(ctx.services.db, ctx.auth.orgId, queueId);
  if (!queue) throw new AppError('ERR_QUEUE_NOT_FOUND');
  return queue;
}
