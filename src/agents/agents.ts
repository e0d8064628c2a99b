/**
 * Agent records per organisation (spec "Agent and chat", section 11). The record is a draft
 * whose `version` grows with every update; `agent_publish_release` freezes a numbered
 * snapshot. Decision (schemas/tools/agent-management): a chat runs the agent's latest release,
 * or the draft while the agent has none, so a team can try an agent before publishing it.
 */
import type { Knex } from 'knex';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { decodeCursor, encodeCursor } from '../kernel/page.js';
import { AppError } from '../errors/index.js';

export interface ServerRef {
  server: string;
  tools?: string[] | undefined;
}

/** What a chat runs: the fields of a release snapshot. */
export interface AgentConfig {
  name: string;
  description: string;
  instructions: string;
  servers: ServerRef[];
  model: string | null;
  outputSchema: Record<string, unknown> | null;
  introMessage: string | null;
}

export interface AgentRecord extends AgentConfig {
  agentId: string;
  createdAt: string;
  updatedAt: string;
  version: number;
  releaseVersion: number | null;
  isPublicTemplate: boolean;
}

export interface AgentCreate {
  name: string;
  description?: string | undefined;
  instructions: string;
  servers?: ServerRef[] | undefined;
  model?: string | undefined;
  outputSchema?: Record<string, unknown> | undefined;
  introMessage?: string | undefined;
}

export type AgentPatch = Partial<{
  name: string;
  description: string;
  instructions: string;
  servers: ServerRef[];
  model: string | null;
  outputSchema: Record<string, unknown> | null;
  introMessage: string | null;
}>;

interface AgentRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  instructions: string;
  servers: string;
  model: string | null;
  output_schema: string | null;
  intro_message: string | null;
  is_public_template: boolean | number;
  version: number | string;
  release_version: number | string | null;
  created_at: string;
  updated_at: string;
}

export const AGENT_ID_PATTERN = /^agt_[0-9a-f]{32}$/;

function toRecord(r: AgentRow): AgentRecord {
  return {
    agentId: r.id,
    name: r.name,
    description: r.description,
    instructions: r.instructions,
    servers: fromJson<ServerRef[]>(r.servers) ?? [],
    model: r.model,
    outputSchema: fromJson<Record<string, unknown>>(r.output_schema),
    introMessage: r.intro_message,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    version: Number(r.version),
    releaseVersion: r.release_version === null ? null : Number(r.release_version),
    isPublicTemplate: Boolean(r.is_public_template),
  };
}

export function configOf(a: AgentRecord | AgentConfig): AgentConfig {
  return {
    name: a.name,
    description: a.description,
    instructions: a.instructions,
    servers: a.servers,
    model: a.model,
    outputSchema: a.outputSchema,
    introMessage: a.introMessage,
  };
}

export async function createAgent(db: Knex, orgId: string, input: AgentCreate): Promise<AgentRecord> {
  const now = nowIso();
  const row: AgentRow = {
    id: newId('agt'),
    org_id: orgId,
    name: input.name,
    description: input.description ?? '',
    instructions: input.instructions,
    servers: toJson(input.servers ?? []) as string,
    model: input.model ?? null,
    output_schema: toJson(input.outputSchema ?? null),
    intro_message: input.introMessage ?? null,
    is_public_template: false,
    version: 1,
    release_version: null,
    created_at: now,
    updated_at: now,
  };
  await db('agents').insert(row);
  return toRecord(row);
}

export async function getAgent(db: Knex, orgId: string, agentId: string): Promise<AgentRecord | undefined> {
  const row = (await db('agents').where({ org_id: orgId, id: agentId }).first()) as AgentRow | undefined;
  return row ? toRecord(row) : undefined;
}

export async function requireAgent(db: Knex, orgId: string, agentId: string): Promise<AgentRecord> {
  const agent = await getAgent(db, orgId, agentId);
  if (!agent) throw new AppError('ERR_NOT_FOUND', { message: `No agent ${agentId} in this organisation` });
  return agent;
}

/** One page in creation order (ids are time-ordered), `limit` 1–100. */
export async function listAgents(
  db: Knex,
  orgId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ agents: AgentRecord[]; nextCursor: string | null }> {
  const q = db('agents').where({ org_id: orgId });
  if (page.cursor !== undefined) q.where('id', '>', decodeCursor('agents', page.cursor, 'string', AGENT_ID_PATTERN));
  const rows = (await q.orderBy('id', 'asc').limit(page.limit + 1)) as AgentRow[];
  const more = rows.length > page.limit;
  const items = rows.slice(0, page.limit).map(toRecord);
  return { agents: items, nextCursor: more ? encodeCursor('agents', items[items.length - 1]!.agentId) : null };
}

/**
 * A no-op write that takes the agent's lock before the transaction reads it (sqlite: the
 * database write lock, so a read-to-write upgrade never fails with SQLITE_BUSY; PostgreSQL: the
 * row lock, so concurrent updates serialise). Unknown agent → 404.
 */
async function lockAgent(trx: Knex.Transaction, orgId: string, agentId: string): Promise<void> {
  const n = await trx('agents')
    .where({ org_id: orgId, id: agentId })
    .update({ version: trx.raw('version') });
  if (n === 0) throw new AppError('ERR_NOT_FOUND', { message: `No agent ${agentId} in this organisation` });
}

const PATCH_COLUMNS: Record<keyof AgentPatch, keyof AgentRow> = {
  name: 'name',
  description: 'description',
  instructions: 'instructions',
  servers: 'servers',
  model: 'model',
  outputSchema: 'output_schema',
  introMessage: 'intro_message',
};

/** Partial update: only the fields given change; the draft version grows by one. */
export async function updateAgent(db: Knex, orgId: string, agentId: string, patch: AgentPatch): Promise<AgentRecord> {
  return db.transaction(async (trx) => {
    await lockAgent(trx, orgId, agentId);
    const current = await requireAgent(trx, orgId, agentId);
    const changes: Record<string, unknown> = { version: current.version + 1, updated_at: nowIso() };
    for (const [field, column] of Object.entries(PATCH_COLUMNS) as [keyof AgentPatch, keyof AgentRow][]) {
      if (!(field in patch)) continue;
      const value = patch[field];
      changes[column] = field === 'servers' || field === 'outputSchema' ? toJson(value ?? null) : (value ?? null);
    }
    await trx('agents').where({ org_id: orgId, id: agentId }).update(changes);
    return requireAgent(trx, orgId, agentId);
  });
}

export async function deleteAgent(db: Knex, orgId: string, agentId: string): Promise<boolean> {
  return (await db('agents').where({ org_id: orgId, id: agentId }).delete()) > 0;
}

/** An immutable numbered snapshot of the current draft. */
export async function publishRelease(
  db: Knex,
  orgId: string,
  agentId: string,
  notes: string | undefined,
): Promise<{ agentId: string; releaseVersion: number; publishedAt: string }> {
  return db.transaction(async (trx) => {
    await lockAgent(trx, orgId, agentId);
    const agent = await requireAgent(trx, orgId, agentId);
    const releaseVersion = (agent.releaseVersion ?? 0) + 1;
    const publishedAt = nowIso();
    await trx('agent_releases').insert({
      agent_id: agentId,
      release_version: releaseVersion,
      org_id: orgId,
      draft_version: agent.version,
      snapshot: toJson(configOf(agent)),
      notes: notes ?? null,
      published_at: publishedAt,
    });
    // The lock above serialises publications; the primary key would catch any that slipped by.
    await trx('agents').where({ org_id: orgId, id: agentId }).update({ release_version: releaseVersion });
    return { agentId, releaseVersion, publishedAt };
  });
}

/** Spec section 11: a public template needs at least one release. */
export async function setPublicTemplate(
  db: Knex,
  orgId: string,
  agentId: string,
  { isPublic }: { isPublic: boolean },
): Promise<AgentRecord> {
  const agent = await requireAgent(db, orgId, agentId);
  if (isPublic && agent.releaseVersion === null) throw new AppError('ERR_AGENT_PUBLIC_NEEDS_RELEASE');
  await db('agents').where({ org_id: orgId, id: agentId }).update({ is_public_template: isPublic });
  return { ...agent, isPublicTemplate: isPublic };
}

/** The configuration a chat runs: the latest release, else the draft. */
export async function runnableConfig(db: Knex, agent: AgentRecord): Promise<AgentConfig & { release: number | null }> {
  if (agent.releaseVersion === null) return { ...configOf(agent), release: null };
  const row = (await db('agent_releases')
    .where({ agent_id: agent.agentId, release_version: agent.releaseVersion })
    .first('snapshot')) as { snapshot: string } | undefined;
  const snapshot = row ? fromJson<AgentConfig>(row.snapshot) : null;
  return snapshot
    ? { ...configOf({ ...snapshot, introMessage: snapshot.introMessage ?? null }), release: agent.releaseVersion }
    : { ...configOf(agent), release: null };
}
