/**
 * Claims that share a process's run slots fairly across organisations (README.md "Sharing the
 * run slots"): the oldest PENDING runs of the organisations under their cap, at most as many of
 * one organisation as it has slots left. An organisation at its cap is left out, so its backlog
 * does not hold up the others' runs behind it.
 *
 * `left` is what OrgSlots.budget() gives: org id → slots left (0 at its cap); an organisation
 * not in it has `cap` left. It goes to the store as one JSON parameter, so the statement's text
 * never changes (sqlite keeps it prepared, src/storage/statement-cache.ts).
 */
import type { Knex } from 'knex';
import { nowIso } from '../kernel/ids.js';
import type { RunRow } from './runs.js';

export interface FairClaim {
  workerId: string;
  leaseMs: number;
  /** Runs of one organisation executing at once in the process (RUN_ORG_CONCURRENCY). */
  cap: number;
  /** Slots left per organisation executing here (OrgSlots.budget). */
  left: Readonly<Record<string, number>>;
}

/**
 * One pass: of the `limit` oldest PENDING runs of the organisations with slots left, the oldest
 * `left` of each organisation. A MATERIALIZED CTE on PostgreSQL (evaluated once, so `FOR UPDATE
 * SKIP LOCKED` locks at most `limit` rows, as in claimRuns); the window function ranks within
 * those candidates only, never the whole backlog.
 */
const PG_PASS = `with candidates as materialized (
    select id, org_id, created_at from runs
    where status = 'PENDING' and org_id not in (select key from jsonb_each_text(?::jsonb) where value::int <= 0)
    order by created_at, id limit ? for update skip locked),
  picked as materialized (
    select id from (
      select id, org_id, row_number() over (partition by org_id order by created_at, id) as rn from candidates
    ) c
    where rn <= coalesce((?::jsonb ->> c.org_id)::int, ?::int))
  update runs set status = 'RUNNING', claimed_by = ?, lease_until = ?, started_at = ?, attempts = runs.attempts + 1
  from picked where runs.id = picked.id and runs.status = 'PENDING' returning runs.*`;

/** The same pass on sqlite: one writer at a time, and an uncorrelated IN subquery runs once. */
const SQLITE_PASS = `update runs set status = 'RUNNING', claimed_by = ?, lease_until = ?, started_at = ?, attempts = attempts + 1
  where status = 'PENDING' and id in (
    select id from (
      select id, org_id, row_number() over (partition by org_id order by created_at, id) as rn from (
        select id, org_id, created_at from runs
        where status = 'PENDING' and org_id not in (select key from json_each(?) where value <= 0)
        order by created_at, id limit ?)
    ) c
    where rn <= coalesce((select value from json_each(?) where key = c.org_id), ?))
  returning *`;

const byAge = (a: RunRow, b: RunRow): number =>
  a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1;

async function claimPass(db: Knex, claim: FairClaim, limit: number): Promise<RunRow[]> {
  const lease = new Date(Date.now() + claim.leaseMs).toISOString();
  const left = JSON.stringify(claim.left);
  if (db.client.config.client === 'pg') {
    const res = (await db.raw(PG_PASS, [left, limit, left, claim.cap, claim.workerId, lease, nowIso()])) as {
      rows: RunRow[];
    };
    return res.rows;
  }
  return (await db.raw(SQLITE_PASS, [claim.workerId, lease, nowIso(), left, limit, left, claim.cap])) as RunRow[];
}

/**
 * Claims up to `limit` runs, oldest first across the organisations under their cap, at most
 * `left` (else `cap`) of each. A pass whose candidates held more runs of an organisation than it
 * had slots left claims fewer than asked: the next pass leaves that organisation out and looks
 * further. Each further pass fills one more organisation, so there are at most `limit` + 1.
 * Every statement is a write (the write queue's rule, src/storage/write-queue.ts).
 */
export async function claimRunsFairly(db: Knex, claim: FairClaim, limit: number): Promise<RunRow[]> {
  const left: Record<string, number> = { ...claim.left };
  const out: RunRow[] = [];
  while (out.length < limit) {
    const want = limit - out.length;
    const rows = await claimPass(db, { ...claim, left }, want);
    out.push(...rows);
    if (rows.length === want) break;
    let filled = false;
    for (const r of rows) {
      left[r.org_id] = (left[r.org_id] ?? claim.cap) - 1;
      if (left[r.org_id]! <= 0) filled = true;
    }
    if (!filled) break;
  }
  return out.sort(byAge);
}

/**
 * Claims the given run (Redis queue: one job per run id) if it is PENDING and its organisation
 * has a slot left here; undefined otherwise (runStateOf tells which).
 */
export async function claimRunUnderCap(db: Knex, claim: FairClaim, runId: string): Promise<RunRow | undefined> {
  const lease = new Date(Date.now() + claim.leaseMs).toISOString();
  const left = JSON.stringify(claim.left);
  const pg = db.client.config.client === 'pg';
  const slotsLeft = pg
    ? 'coalesce((?::jsonb ->> org_id)::int, ?::int) > 0'
    : 'coalesce((select value from json_each(?) where key = runs.org_id), ?) > 0';
  const rows = (await db('runs')
    .where({ id: runId, status: 'PENDING' })
    .andWhereRaw(slotsLeft, [left, claim.cap])
    .update({
      status: 'RUNNING',
      claimed_by: claim.workerId,
      lease_until: lease,
      started_at: nowIso(),
      attempts: db.raw('attempts + 1'),
    })
    .returning('*')) as RunRow[];
  return rows[0];
}

export interface RunState {
  org_id: string;
  status: string;
  created_at: string;
}

/** A run's organisation, status and age (why claimRunUnderCap claimed nothing); undefined when it is gone. */
export async function runStateOf(db: Knex, runId: string): Promise<RunState | undefined> {
  return (await db('runs').where({ id: runId }).first('org_id', 'status', 'created_at')) as RunState | undefined;
}
