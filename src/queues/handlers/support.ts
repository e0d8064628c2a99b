/**
 * What the queue management handlers share: the org's queue with the management 404, and the
 * trigger rule of createQueue / updateQueue.
 */
import type { Knex } from 'knex';
import type { Services } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { findTrigger } from '../../triggers/index.js';
import { findQueue, type QueueRecord } from '../queues.js';

type Ctx = { services: Services; auth: { orgId: string } };

/** Management endpoints (openapi/management.yaml): 404 not_found, also for another organisation's queue. */
export async function managedQueue(ctx: Ctx, queueId: string): Promise<QueueRecord> {
  const found = await findQueue(ctx.services.db, ctx.auth.orgId, queueId);
  if (!found) throw new AppError('ERR_NOT_FOUND', { message: 'Queue not found' });
  return found;
}

/**
 * A queue's trigger must be an API or webhook trigger of a workflow in the organisation
 * (findTrigger sees only those). 400, not 404: the queue URL exists, the body is what is wrong.
 */
export async function checkQueueTrigger(db: Knex, orgId: string, triggerId: string): Promise<void> {
  if (await findTrigger(db, orgId, triggerId)) return;
  throw new AppError('ERR_QUEUE_INVALID_TRIGGER', {
    message: 'triggerId must name an API or webhook trigger of a workflow in this organisation.',
    details: { field: 'triggerId' },
  });
}
