/**
 * GET /v1/runs over runs in every state (src/runs/list.ts): the listing merges walks over
 * different indexes (one per status unfiltered; finished runs from partial indexes with the
 * PENDING and RUNNING ones for a workflow or trigger filter), so every filter is paged to its end and
 * compared with the same filter computed over the rows themselves. The rows are written
 * straight into the store with the service's workers off, so PENDING and RUNNING runs stay as
 * written. On sqlite the query plans are read: each walk uses its index, no page sorts the
 * organisation's runs.
 */
import { expect } from 'chai';
import { v7 as uuidv7 } from 'uuid';
import { listRunsQuery, type RunFilter } from '../../../src/runs/list.js';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();
const STATUSES = ['PENDING', 'RUNNING', 'COMPLETE', 'FAILED', 'TIMEOUT'] as const;
const HOUR = 3_600_000;

interface Seeded {
  id: string;
  org_id: string;
  workflow_id: string;
  trigger_id: string | null;
  status: string;
  created_at: string;
}

/** A deterministic generator, so a failure names the same rows on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

for (const kind of kinds) {
  describe(`HTTP: the runs list over runs in every state (${kind})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let flows: Deployed[];
    let rows: Seeded[];
    const now = Date.now();

    before(async () => {
      server = await startTestServer(kind, { RUN_CONCURRENCY: '0' });
      org = await createTestOrg(server, 'Walks org');
      other = await createTestOrg(server, 'Walks other org');
      flows = [
        await deploy(server, org, { name: 'Busy', steps: [code('One', 'return 1;')] }),
        await deploy(server, org, { name: 'Quiet', steps: [code('One', 'return 1;')] }),
      ];
      const foreign = await deploy(server, other, { name: 'Theirs', steps: [code('One', 'return 1;')] });
      const rand = prng(42);
      rows = [];
      const total = 260;
      for (let i = 0; i < total; i++) {
        const theirs = i % 9 === 0;
        const created = now - 48 * HOUR + Math.floor(((i + rand() * 0.9) * 48 * HOUR) / total);
        const flow = theirs ? foreign : rand() < 0.8 ? flows[0]! : flows[1]!;
        const t = rand();
        // Runs without a trigger (started by an agent or the gateway) belong to no trigger filter.
        const triggerId = t < 0.1 ? null : t < 0.6 ? flow.apiTriggerId : flow.webhookTriggerId;
        const s = rand();
        // The newest runs are the likeliest PENDING, as under a backlog; some are older.
        const status =
          i > total * 0.8 && s < 0.6
            ? 'PENDING'
            : s < 0.05
              ? 'PENDING'
              : s < 0.1
                ? 'RUNNING'
                : s < 0.75
                  ? 'COMPLETE'
                  : s < 0.95
                    ? 'FAILED'
                    : 'TIMEOUT';
        rows.push({
          id: `run_${uuidv7({ msecs: created }).replace(/-/g, '')}`,
          org_id: theirs ? other.orgId : org.orgId,
          workflow_id: flow.automationId,
          trigger_id: triggerId,
          status,
          created_at: new Date(created).toISOString(),
        });
      }
      const db = server.app.services.db;
      await db('runs').insert(
        rows.map((r) => ({
          ...r,
          workflow_version: 1,
          inputs: '{}',
          started_by: r.trigger_id === null ? 'agent' : 'api_trigger',
          started_at: r.status === 'PENDING' ? null : r.created_at,
          finished_at: ['PENDING', 'RUNNING'].includes(r.status) ? null : r.created_at,
          // RUNNING rows hold a lease far ahead, so no recovery touches them during the test.
          lease_until: r.status === 'RUNNING' ? new Date(now + 24 * HOUR).toISOString() : null,
          claimed_by: r.status === 'RUNNING' ? 'elsewhere' : null,
          attempts: r.status === 'PENDING' ? 0 : 1,
        })),
      );
    });

    after(async () => {
      await server?.close();
    });

    /** Every run id the filter lists, page by page. */
    async function listAll(params: Record<string, string>, limit: number): Promise<string[]> {
      const ids: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 200; pages++) {
        const qs = new URLSearchParams({ ...params, limit: String(limit), ...(cursor ? { cursor } : {}) });
        const res = await call(server.baseUrl, 'GET', `/v1/runs?${qs}`, { token: org.token });
        expect(res.status, res.text).to.equal(200);
        const items = res.body.items as { runId: string; status: string }[];
        expect(items.length).to.be.at.most(limit);
        ids.push(...items.map((r) => r.runId));
        cursor = res.body.nextCursor as string | null;
        if (cursor === null) return ids;
        expect(items.length, 'a page before the last is full').to.equal(limit);
      }
      throw new Error('more than 200 pages');
    }

    function expected(f: {
      automationId?: string;
      triggerId?: string;
      status?: string;
      after?: number;
      before?: number;
    }) {
      return rows
        .filter(
          (r) =>
            r.org_id === org.orgId &&
            (f.automationId === undefined || r.workflow_id === f.automationId) &&
            (f.triggerId === undefined || r.trigger_id === f.triggerId) &&
            (f.status === undefined || r.status === f.status) &&
            (f.after === undefined || Date.parse(r.created_at) >= f.after) &&
            (f.before === undefined || Date.parse(r.created_at) < f.before),
        )
        .map((r) => r.id)
        .sort()
        .reverse();
    }

    it('op:listRuns lists every filter whole, newest first, across pages, whatever state its runs are in', async () => {
      const [busy, quiet] = flows;
      const from = now - 30 * HOUR;
      const to = now - 6 * HOUR;
      const cases: Array<{
        automationId?: string;
        triggerId?: string;
        status?: string;
        after?: number;
        before?: number;
      }> = [
        {},
        ...STATUSES.map((status) => ({ status })),
        { automationId: busy!.automationId },
        { automationId: quiet!.automationId },
        { triggerId: busy!.apiTriggerId },
        { triggerId: quiet!.webhookTriggerId },
        { automationId: busy!.automationId, status: 'PENDING' },
        { automationId: quiet!.automationId, status: 'FAILED' },
        { triggerId: busy!.webhookTriggerId, status: 'RUNNING' },
        { automationId: busy!.automationId, triggerId: busy!.apiTriggerId },
        { automationId: busy!.automationId, triggerId: quiet!.apiTriggerId },
        { after: from, before: to },
        { automationId: busy!.automationId, after: from },
        { status: 'COMPLETE', before: to },
      ];
      for (const c of cases) {
        const params: Record<string, string> = {};
        if (c.automationId) params.automationId = c.automationId;
        if (c.triggerId) params.triggerId = c.triggerId;
        if (c.status) params.status = c.status;
        if (c.after !== undefined) params.createdAfter = new Date(c.after).toISOString();
        if (c.before !== undefined) params.createdBefore = new Date(c.before).toISOString();
        const want = expected(c);
        for (const limit of [7, 200]) {
          expect(await listAll(params, limit), `${JSON.stringify(params)}, limit ${limit}`).to.deep.equal(want);
        }
      }
      // The seed holds every state for the filters above to mean something.
      for (const status of STATUSES) expect(expected({ status }).length, status).to.be.greaterThan(3);
      expect(expected({ automationId: busy!.automationId, status: 'PENDING' }).length).to.be.greaterThan(3);
    });

    it('a run that finishes moves from one walk to another and is listed once', async () => {
      const [busy] = flows;
      const pending = expected({ automationId: busy!.automationId, status: 'PENDING' });
      const moved = pending[Math.floor(pending.length / 2)]!;
      const db = server.app.services.db;
      await db('runs').where({ id: moved }).update({ status: 'COMPLETE', finished_at: new Date().toISOString() });
      rows.find((r) => r.id === moved)!.status = 'COMPLETE';
      try {
        const all = await listAll({ automationId: busy!.automationId }, 9);
        expect(all.filter((id) => id === moved)).to.have.length(1);
        expect(all).to.deep.equal(expected({ automationId: busy!.automationId }));
      } finally {
        await db('runs').where({ id: moved }).update({ status: 'PENDING', finished_at: null });
        rows.find((r) => r.id === moved)!.status = 'PENDING';
      }
    });

    if (kind === 'sqlite') {
      it('each walk reads its own index and no page sorts the organisation’s runs (sqlite query plans)', async () => {
        const db = server.app.services.db;
        const [busy] = flows;
        const plan = async (filter: RunFilter) => {
          const { sql, bindings } = listRunsQuery(db, org.orgId, filter, { limit: 25 }).query.toSQL();
          const steps = (await db.raw(`explain query plan ${sql}`, [...bindings])) as {
            id: number;
            parent: number;
            detail: string;
          }[];
          const byId = new Map(steps.map((s) => [s.id, s]));
          // A sort inside a walk (under the walk's own co-routine, or the statement's when it is
          // one walk) would read every run the walk matches; the merge may sort the walks' rows.
          const merged = steps.some((s) => s.detail.startsWith('CO-ROUTINE'));
          const sortsInWalk = steps.filter(
            (s) =>
              s.detail.startsWith('USE TEMP B-TREE') &&
              (!merged || (byId.get(s.parent)?.detail ?? '').startsWith('CO-ROUTINE')),
          );
          expect(sortsInWalk, steps.map((s) => `${s.id}<${s.parent} ${s.detail}`).join('\n')).to.deep.equal([]);
          return steps.map((s) => s.detail);
        };
        const uses = (detail: string[], index: string) => detail.filter((d) => d.includes(`USING INDEX ${index} `));
        const unfiltered = await plan({});
        expect(uses(unfiltered, 'runs_org_status_id'), unfiltered.join('\n')).to.have.length(STATUSES.length);
        const byFlow = await plan({ automationId: busy!.automationId });
        expect(uses(byFlow, 'runs_org_workflow_finished'), byFlow.join('\n')).to.have.length(1);
        expect(uses(byFlow, 'runs_org_status_id'), byFlow.join('\n')).to.have.length(2);
        const byTrigger = await plan({ triggerId: busy!.apiTriggerId });
        expect(uses(byTrigger, 'runs_org_trigger_finished'), byTrigger.join('\n')).to.have.length(1);
        const byStatus = await plan({ status: 'FAILED' });
        expect(uses(byStatus, 'runs_org_status_id'), byStatus.join('\n')).to.have.length(1);
        for (const detail of [unfiltered, byFlow, byTrigger, byStatus])
          expect(
            detail.filter((d) => /^SCAN runs\b/.test(d)),
            detail.join('\n'),
          ).to.deep.equal([]);
      });
    }
  });
}
