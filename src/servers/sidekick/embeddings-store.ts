/**
 * Stored embeddings (migration 009_discovery_embeddings): read and written by scope (an
 * organisation's id, or `*` for the service's own texts), model and SHA-256 of the text, and
 * pruned per organisation (`pruneVectors`).
 */
import type { Knex } from 'knex';

export const SHARED_SCOPE = '*';
/** Hashes per query: well under sqlite's and PostgreSQL's bound-parameter limits. */
const CHUNK = 400;

export interface StoredVector {
  scope: string;
  hash: string;
  vector: Float32Array;
}

export function toBytes(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out;
}

export function fromBytes(b: Uint8Array, dims: number): Float32Array | undefined {
  if (b.byteLength !== dims * 4) return undefined;
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float32Array(dims);
  for (let i = 0; i < dims; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** Stored vectors of `hashes` within `scopes`, keyed `scope:hash`. */
export async function loadVectors(
  db: Knex,
  scopes: readonly string[],
  model: string,
  hashes: readonly string[],
): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (let i = 0; i < hashes.length; i += CHUNK) {
    const rows = (await db('discovery_embeddings')
      .select('scope', 'content_hash', 'dims', 'vector')
      .whereIn('scope', scopes as string[])
      .andWhere('model', model)
      .whereIn('content_hash', hashes.slice(i, i + CHUNK) as string[])) as {
      scope: string;
      content_hash: string;
      dims: number;
      vector: Uint8Array;
    }[];
    for (const r of rows) {
      const v = fromBytes(r.vector, Number(r.dims));
      if (v) out.set(`${r.scope}:${r.content_hash}`, v);
    }
  }
  return out;
}

export async function saveVectors(db: Knex, model: string, rows: readonly StoredVector[]): Promise<void> {
  const now = new Date().toISOString();
  for (let i = 0; i < rows.length; i += CHUNK / 4) {
    await db('discovery_embeddings')
      .insert(
        rows.slice(i, i + CHUNK / 4).map((r) => ({
          scope: r.scope,
          model,
          content_hash: r.hash,
          dims: r.vector.length,
          vector: toBytes(r.vector),
          created_at: now,
        })),
      )
      .onConflict(['scope', 'model', 'content_hash'])
      .ignore();
  }
}

/**
 * Deletes the rows of one organisation's scope that its documents no longer use: texts of
 * removed or edited tools (hashes not in `keep`) and texts of another model, if created before
 * `before` (so a text that comes and goes, or another process's newer catalogue, is not
 * re-embedded for nothing). Returns the number of rows deleted.
 */
export async function pruneVectors(
  db: Knex,
  scope: string,
  model: string,
  { keep, before }: { keep: ReadonlySet<string>; before: string },
): Promise<number> {
  const rows = (await db('discovery_embeddings')
    .select('model', 'content_hash')
    .where('scope', scope)
    .andWhere('created_at', '<', before)) as { model: string; content_hash: string }[];
  const byModel = new Map<string, string[]>();
  for (const r of rows) {
    if (r.model === model && keep.has(r.content_hash)) continue;
    const hashes = byModel.get(r.model) ?? [];
    hashes.push(r.content_hash);
    byModel.set(r.model, hashes);
  }
  let deleted = 0;
  for (const [m, hashes] of byModel) {
    for (let i = 0; i < hashes.length; i += CHUNK) {
      deleted += await db('discovery_embeddings')
        .where({ scope, model: m })
        .whereIn('content_hash', hashes.slice(i, i + CHUNK))
        .andWhere('created_at', '<', before)
        .delete();
    }
  }
  return deleted;
}
