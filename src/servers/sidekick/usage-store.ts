/**
 * The store behind discovery's learning from use (usage.ts; migration 010 `discovery_usage`).
 * Every statement is filtered by organisation. One row per organisation,
 * remembered request (by the SHA-256 of its sorted analysed terms) and tool; a repeated pair
 * adds a use and refreshes `last_used_at` and the wording. After each write the organisation
 * is cut back to its `maxRows` most recently used rows, so storage stays bounded whatever the
 * traffic. Works on sqlite and PostgreSQL (upsert with ON CONFLICT on both).
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { GatewayContext } from '../../gateway/index.js';

const TABLE = 'discovery_usage';

/** A remembered pair: after `request`, a caller of the organisation used `server`/`tool`. */
export interface UsageRow {
  request: string;
  /** Analysed (stemmed) terms of the request, sorted and distinct. */
  terms: readonly string[];
  server: string;
  tool: string;
  uses: number;
  /** ISO 8601 UTC. */
  lastUsedAt: string;
}

export interface UsageWrite {
  request: string;
  terms: readonly string[];
  server: string;
  tool: string;
  /** ISO 8601 UTC. */
  at: string;
}

/** Where remembered pairs live. The default keeps them in the service's store (`ctx.services.db`). */
export interface UsageStore {
  /** The organisation's rows, most recently used first. */
  load(ctx: GatewayContext): Promise<UsageRow[]>;
  /** Adds one use of the pair and keeps at most `maxRows` rows for the organisation. */
  record(ctx: GatewayContext, write: UsageWrite, maxRows: number): Promise<void>;
}

interface Row {
  request: string;
  terms: string;
  server: string;
  tool: string;
  uses: number | string;
  last_used_at: string;
}

const hashTerms = (terms: readonly string[]): string => createHash('sha256').update(terms.join(' ')).digest('hex');

export const knexUsageStore: UsageStore = {
  async load(ctx) {
    const rows = (await ctx.services
      .db(TABLE)
      .where({ org_id: ctx.orgId })
      .orderBy([
        { column: 'last_used_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .select('request', 'terms', 'server', 'tool', 'uses', 'last_used_at')) as Row[];
    return rows.map((r) => ({
      request: r.request,
      terms: r.terms ? r.terms.split(' ') : [],
      server: r.server,
      tool: r.tool,
      uses: Number(r.uses),
      lastUsedAt: r.last_used_at,
    }));
  },

  async record(ctx, w, maxRows) {
    const db: Knex = ctx.services.db;
    await db(TABLE)
      .insert({
        org_id: ctx.orgId,
        request_hash: hashTerms(w.terms),
        request: w.request,
        terms: w.terms.join(' '),
        server: w.server,
        tool: w.tool,
        uses: 1,
        created_at: w.at,
        last_used_at: w.at,
      })
      .onConflict(['org_id', 'request_hash', 'server', 'tool'])
      .merge({ uses: db.raw('??.?? + 1', [TABLE, 'uses']), request: w.request, last_used_at: w.at });
    // Bound per organisation: keep the most recently used rows only.
    const keep = db(TABLE)
      .select('id')
      .where({ org_id: ctx.orgId })
      .orderBy([
        { column: 'last_used_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(maxRows);
    await db(TABLE).where({ org_id: ctx.orgId }).whereNotIn('id', keep).delete();
  },
};
