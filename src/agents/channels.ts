/**
 * Agent API channels (spec section 5, "Authentication" 2): one agent exposed over plain HTTP
 * at `{triggers_url}/ext/triggers/{triggerId}`, called with its channel key in `X-API-Key`.
 * The channel's id is the channel trigger id, `chn_<32 hex>`; workflow triggers are
 * `trg_<32 hex>`, so both share the `/ext/triggers/{triggerId}` namespace and the prefix tells
 * them apart (openapi/management.yaml createChannel).
 *
 * The key is shown once (creation, rotation) and stored as SHA-256 with a 4-character hint,
 * like API keys. Every lookup is scoped to the organisation, except the
 * channel call itself, which carries no organisation and is answered by id and key.
 *
 * ETag (openapi/management.yaml ChannelETag): agent_channels has no version column, so the
 * tag is `updated_at` in epoch milliseconds. Every write moves `updated_at` forward by at
 * least 1 ms and is conditional on the value it read, so the tag changes with every change
 * and a concurrent writer loses with 412 rather than overwriting silently.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { generateSecret, hashSecret, safeEqual } from '../kernel/crypto.js';
import { newId } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { getAgent } from './agents.js';

export type OutputFormat = 'text' | 'markdown' | 'json';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'markdown', 'json'];

export interface ChannelRecord {
  triggerId: string;
  orgId: string;
  agentId: string;
  name: string;
  outputFormat: OutputFormat;
  enabled: boolean;
  keyHint: string;
  createdAt: string;
  updatedAt: string;
}

export interface ChannelCreate {
  agentId: string;
  name?: string | undefined;
  outputFormat?: OutputFormat | undefined;
  enabled?: boolean | undefined;
}

export interface ChannelPatch {
  name?: string | undefined;
  outputFormat?: OutputFormat | undefined;
  enabled?: boolean | undefined;
}

export interface RotatedKey {
  triggerId: string;
  apiKey: string;
  keyHint: string;
  rotatedAt: string;
}

interface ChannelRow {
  id: string;
  org_id: string;
  agent_id: string;
  name: string;
  key_hash: string;
  key_hint: string;
  output_format: OutputFormat;
  enabled: boolean | number;
  created_at: string;
  updated_at: string;
}

export const CHANNEL_ID_PATTERN = /^chn_[0-9a-f]{32}$/;
export const CHANNEL_KEY_PREFIX = 'syc';
export const DEFAULT_CHANNEL_NAME = 'API channel';
/** Longer "keys" are never hashed: a generated key is 44 characters. */
const MAX_KEY_LENGTH = 256;

export function isChannelId(id: string): boolean {
  return CHANNEL_ID_PATTERN.test(id);
}

function toRecord(r: ChannelRow): ChannelRecord {
  return {
    triggerId: r.id,
    orgId: r.org_id,
    agentId: r.agent_id,
    name: r.name,
    outputFormat: r.output_format,
    enabled: Boolean(r.enabled),
    keyHint: r.key_hint,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export type ChannelView = Omit<ChannelRecord, 'orgId'> & { url: string };

/** The management view: no organisation id (the caller's own), plus the call URL of spec section 5. */
export function channelView(triggersBaseUrl: string, c: ChannelRecord): ChannelView {
  const { orgId: _org, ...rest } = c;
  return { ...rest, url: `${triggersBaseUrl.replace(/\/+$/, '')}/ext/triggers/${encodeURIComponent(c.triggerId)}` };
}

/** The channel's entity tag: its last change in epoch milliseconds (see the header comment). */
export function channelEtag(c: Pick<ChannelRecord, 'updatedAt'>): number {
  return Date.parse(c.updatedAt);
}

/** A change time strictly after `previous`, so two changes within 1 ms still get two tags. */
function nextChangeTime(previous: string): string {
  return new Date(Math.max(Date.now(), Date.parse(previous) + 1)).toISOString();
}

function newKey(): { apiKey: string; keyHash: string; keyHint: string } {
  const apiKey = generateSecret(CHANNEL_KEY_PREFIX);
  return { apiKey, keyHash: hashSecret(apiKey), keyHint: apiKey.slice(-4) };
}

const invalid = (message: string, field: string) =>
  new AppError('ERR_REQUEST_INVALID', { message, details: [{ where: 'body', path: `/${field}`, message }] });
const notFound = () => new AppError('ERR_NOT_FOUND', { message: 'Channel not found' });

function checkFields(input: ChannelPatch): void {
  if (
    input.name !== undefined &&
    (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200)
  ) {
    throw invalid('name must be 1 to 200 characters', 'name');
  }
  if (input.outputFormat !== undefined && !OUTPUT_FORMATS.includes(input.outputFormat)) {
    throw invalid('outputFormat must be text, markdown or json', 'outputFormat');
  }
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean')
    throw invalid('enabled must be a boolean', 'enabled');
}

async function rowOf(db: Knex, orgId: string, triggerId: string): Promise<ChannelRow | undefined> {
  // A malformed id cannot exist: answer without a query.
  if (!isChannelId(triggerId)) return undefined;
  return (await db('agent_channels').where({ org_id: orgId, id: triggerId }).first()) as ChannelRow | undefined;
}

/** A channel of an agent of the organisation (404 for an unknown agent); returns the key once. */
export async function createChannel(
  db: Knex,
  orgId: string,
  input: ChannelCreate,
): Promise<{ channel: ChannelRecord; apiKey: string }> {
  checkFields(input);
  if (!(await getAgent(db, orgId, input.agentId)))
    throw new AppError('ERR_NOT_FOUND', { message: `No agent ${input.agentId} in this organisation` });
  const { apiKey, keyHash, keyHint } = newKey();
  const now = new Date().toISOString();
  const row: ChannelRow = {
    id: newId('chn'),
    org_id: orgId,
    agent_id: input.agentId,
    name: input.name ?? DEFAULT_CHANNEL_NAME,
    key_hash: keyHash,
    key_hint: keyHint,
    output_format: input.outputFormat ?? 'text',
    enabled: input.enabled ?? true,
    created_at: now,
    updated_at: now,
  };
  // The agent row is referenced by a foreign key: an agent deleted meanwhile fails the insert.
  await db('agent_channels').insert(row);
  return { channel: toRecord(row), apiKey };
}

export async function getChannel(db: Knex, orgId: string, triggerId: string): Promise<ChannelRecord | undefined> {
  const row = await rowOf(db, orgId, triggerId);
  return row ? toRecord(row) : undefined;
}

export async function requireChannel(db: Knex, orgId: string, triggerId: string): Promise<ChannelRecord> {
  const channel = await getChannel(db, orgId, triggerId);
  if (!channel) throw notFound();
  return channel;
}

/** Oldest first, one page (src/kernel/page.ts), optionally only one agent's channels. */
export async function listChannels(
  db: Knex,
  orgId: string,
  filter: { agentId?: string | undefined } = {},
  page: PageRequest = {},
): Promise<Page<ChannelRecord>> {
  const q = db('agent_channels').where({ org_id: orgId }).select('*');
  if (filter.agentId !== undefined) q.andWhere({ agent_id: filter.agentId });
  const { rows, nextCursor } = await pageRows<ChannelRow & Record<string, unknown>>(
    q,
    { list: 'channels', column: 'id', keyPattern: CHANNEL_ID_PATTERN },
    page,
  );
  return { items: rows.map(toRecord), nextCursor };
}

/** 404 when the channel is gone, else 412 with its current tag (a conditional write touched nothing). */
async function failedPrecondition(db: Knex, orgId: string, triggerId: string): Promise<never> {
  const current = await getChannel(db, orgId, triggerId);
  if (!current) throw notFound();
  throw new AppError('ERR_VERSION_CONFLICT', { details: { currentVersion: channelEtag(current) } });
}

/**
 * Conditional write on the row's `updated_at` (optimistic lock). `expectedEtag` undefined
 * writes over whatever is current (rotation); a number must equal the current tag (412).
 */
async function writeIfUnchanged(
  db: Knex,
  orgId: string,
  triggerId: string,
  { expectedEtag, set }: { expectedEtag: number | undefined; set: Record<string, unknown> },
): Promise<string> {
  const row = await rowOf(db, orgId, triggerId);
  if (!row) throw notFound();
  if (expectedEtag !== undefined && expectedEtag !== Date.parse(row.updated_at))
    return failedPrecondition(db, orgId, triggerId);
  const updatedAt = nextChangeTime(row.updated_at);
  const n = await db('agent_channels')
    .where({ org_id: orgId, id: triggerId, updated_at: row.updated_at })
    .update({ ...set, updated_at: updatedAt });
  if (n !== 1) return failedPrecondition(db, orgId, triggerId);
  return updatedAt;
}

export async function updateChannel(
  db: Knex,
  orgId: string,
  triggerId: string,
  { expectedEtag, patch }: { expectedEtag: number; patch: ChannelPatch },
): Promise<ChannelRecord> {
  checkFields(patch);
  const set: Record<string, unknown> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.outputFormat !== undefined) set.output_format = patch.outputFormat;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  if (Object.keys(set).length === 0)
    throw new AppError('ERR_REQUEST_INVALID', { message: 'Nothing to update: send name, outputFormat or enabled' });
  await writeIfUnchanged(db, orgId, triggerId, { expectedEtag, set });
  return requireChannel(db, orgId, triggerId);
}

export async function deleteChannel(db: Knex, orgId: string, triggerId: string, expectedEtag?: number): Promise<void> {
  if (!isChannelId(triggerId)) throw notFound();
  const where: Record<string, unknown> = { org_id: orgId, id: triggerId };
  if (expectedEtag !== undefined) {
    // A tag no Date can hold matches no channel: 412, as any stale tag.
    if (!Number.isSafeInteger(expectedEtag) || Number.isNaN(new Date(expectedEtag).getTime()))
      return failedPrecondition(db, orgId, triggerId);
    where.updated_at = new Date(expectedEtag).toISOString();
  }
  const deleted = await db('agent_channels').where(where).delete();
  if (deleted !== 1) await failedPrecondition(db, orgId, triggerId);
}

/**
 * Spec "Authentication" 2: the key is replaced atomically — one UPDATE swaps the stored hash,
 * so the old key fails and the new one works from the same commit, in every process
 * (verifyChannelKey reads the store on every call). A concurrent change to the channel in
 * the same instant only makes the write retry with the fresh row.
 */
export async function rotateChannelKey(db: Knex, orgId: string, triggerId: string): Promise<RotatedKey> {
  for (let attempt = 0; ; attempt++) {
    const { apiKey, keyHash, keyHint } = newKey();
    try {
      const rotatedAt = await writeIfUnchanged(db, orgId, triggerId, {
        expectedEtag: undefined,
        set: {
          key_hash: keyHash,
          key_hint: keyHint,
        },
      });
      return { triggerId, apiKey, keyHint, rotatedAt };
    } catch (err) {
      if (!(err instanceof AppError && err.key === 'ERR_VERSION_CONFLICT') || attempt >= 4) throw err;
    }
  }
}

/**
 * The channel call (spec 5): by id, comparing the key hash in constant time; read from the
 * store every time (no memo), so a rotation or a disable applies at once. undefined for an
 * unknown id or a wrong key (the caller answers 401 for both). A disabled channel is returned
 * with `enabled: false`: the caller answers 403 for it.
 */
export async function verifyChannelKey(db: Knex, triggerId: string, key: string): Promise<ChannelRecord | undefined> {
  if (!isChannelId(triggerId) || typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH)
    return undefined;
  const row = (await db('agent_channels').where({ id: triggerId }).first()) as ChannelRow | undefined;
  if (!row || !safeEqual(row.key_hash, hashSecret(key))) return undefined;
  return toRecord(row);
}
