/**
 * What the agent and channel handlers share: the 400 for configuration checks, optimistic
 * locking of agents by their draft version, and the channel ETag (epoch milliseconds of
 * `updatedAt`, openapi/management.yaml ChannelETag).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Knex } from 'knex';
import { AppError } from '../../errors/index.js';
import { parseIfMatch, requireIfMatch } from '../../http/support.js';
import type { Services } from '../../services.js';
import { failedPrecondition } from '../../storage/versioned.js';
import { deleteAgent, updateAgent, type AgentPatch, type AgentRecord, type ServerRef } from '../agents.js';
import { channelEtag, type ChannelRecord } from '../channels.js';
import { AgentConfigError, checkAgentConfig } from '../validate.js';

/** `servers[0].server` → `/servers/0/server`: the JSON pointer form of the pipeline's own 400 details. */
function pointer(field: string): string {
  return `/${field
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .join('/')}`;
}

/** checkAgentConfig with its AgentConfigError as 400 invalid_request, details naming the field. */
export async function checkConfig(
  services: Services,
  orgId: string,
  input: {
    servers?: ServerRef[] | undefined;
    model?: string | null | undefined;
    outputSchema?: Record<string, unknown> | null | undefined;
  },
): Promise<void> {
  try {
    await checkAgentConfig(services, orgId, input);
  } catch (err) {
    if (!(err instanceof AgentConfigError)) throw err;
    throw new AppError('ERR_REQUEST_INVALID', {
      message: err.message,
      details: [{ where: 'body', path: pointer(err.field), message: err.message }],
    });
  }
}

/**
 * updateAgent only when the draft is still at `expected` (If-Match). The guarded no-op write
 * takes the row's lock first, so a concurrent update waits for it and then fails the
 * version check (412) instead of overwriting the other one.
 */
export async function updateAgentIfCurrent(
  db: Knex,
  orgId: string,
  agentId: string,
  { expected, patch }: { expected: number; patch: AgentPatch },
): Promise<AgentRecord> {
  return db.transaction(async (trx) => {
    const locked = await trx('agents')
      .where({ org_id: orgId, id: agentId, version: expected })
      .update({ version: expected });
    if (locked !== 1) await failedPrecondition(trx, 'agents', { orgId, id: agentId, what: 'Agent' });
    return updateAgent(trx, orgId, agentId, patch);
  });
}

/**
 * Deletes the agent; its releases, channels and chats (with messages, turns and files) go
 * with it through ON DELETE CASCADE (src/storage/migrations/004_agents.ts).
 */
export async function deleteAgentIfCurrent(
  db: Knex,
  orgId: string,
  agentId: string,
  expected: number | undefined,
): Promise<void> {
  const deleted =
    expected === undefined
      ? await deleteAgent(db, orgId, agentId)
      : (await db('agents').where({ org_id: orgId, id: agentId, version: expected }).delete()) === 1;
  if (!deleted) await failedPrecondition(db, 'agents', { orgId, id: agentId, what: 'Agent' });
}

export function channelEtagHeader(c: Pick<ChannelRecord, 'updatedAt'>): Record<string, string> {
  return { ETag: `"${channelEtag(c)}"` };
}

/** A channel's ETag is epoch milliseconds (13 digits today), longer than a version; the If-Match rules are the same. */
const CHANNEL_TAG_DIGITS = 16;

export function channelIfMatch(req: { headers: IncomingHttpHeaders }): number | undefined {
  return parseIfMatch(req, CHANNEL_TAG_DIGITS);
}

export function requireChannelIfMatch(req: { headers: IncomingHttpHeaders }): number {
  return requireIfMatch(req, CHANNEL_TAG_DIGITS);
}
