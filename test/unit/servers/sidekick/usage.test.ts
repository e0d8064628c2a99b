/**
 * Learning from use (src/servers/sidekick/usage.ts): the discovery engine over an in-memory
 * catalogue, with the usage memory on a real store (sqlite file; PostgreSQL when reachable)
 * and a clock the tests move. Covers the window, failed and ignored calls, caller keys, the
 * per-organisation bound, organisation scoping, two processes sharing the store, a failing
 * store, and pending discovers shared through the machine's Redis.
 */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { createOrganization } from '../../../../src/auth/index.js';
import type { GatewayContext } from '../../../../src/gateway/types.js';
import {
  createDiscoveryEngine,
  createMemorySource,
  knexUsageStore,
  learnedValue,
  LEARNING_WINDOW_MS,
  RedisPending,
  UsageMemory,
  type DetailsResult,
  type DiscoverResult,
  type DiscoveryEngine,
  type UsageMemoryOptions,
} from '../../../../src/servers/sidekick/index.js';
import { loadConfig } from '../../../../src/config/index.js';
import { connectRedis, type RedisClient } from '../../../../src/storage/redis.js';
import { createTestStore, storeKinds, type TestStore } from '../../../helpers/store.js';
import { tools } from './fixtures.js';

const kinds = await storeKinds();

/** Not found at all by the words (slack_send_message is what the team means). */
const MISS = 'let everyone know the deploy finished';
const MISS_VARIANT = 'let everyone know the release deploy finished';
/** Found, but below other tools (stripe_create_refund is meant). */
const LOW = 'give the customer their cash back';

const top = (r: DiscoverResult): string => (r.tools[0] ? `${r.tools[0].serverName}/${r.tools[0].name}` : '(none)');

describe('learnedValue (usage.ts boost formula)', () => {
  it('grows with uses and similarity, saturates below 1, and shares between competing tools', () => {
    expect(learnedValue(1, 1, 1)).to.be.closeTo(0.57, 0.001);
    expect(learnedValue(1, 3, 1))
      .to.be.at.least(0.85)
      .and.below(0.95);
    expect(learnedValue(1, 100, 1)).to.be.at.most(0.95);
    expect(learnedValue(0.6, 3, 1)).to.be.below(learnedValue(1, 3, 1));
    expect(learnedValue(1, 3, 0.5)).to.be.below(learnedValue(1, 3, 1));
  });
});

for (const kind of kinds) {
  describe(`discovery learning from use (usage.ts, ${kind})`, function () {
    this.timeout(30_000);
    let store: TestStore;
    let orgA: string;
    let orgB: string;
    let clock: number;
    const logged: string[] = [];
    const log = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _e, cb) {
          logged.push(chunk.toString());
          cb();
        },
      }),
    );

    const ctx = (orgId: string, callerId?: string): GatewayContext => ({
      services: { db: store.db, config: loadConfig({ DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' }), log },
      log,
      orgId,
      forwardedHeaders: {},
      signal: new AbortController().signal,
      ...(callerId ? { callerId } : {}),
    });
    const setup = (opts: UsageMemoryOptions = {}): { usage: UsageMemory; engine: DiscoveryEngine } => {
      const usage = new UsageMemory({ now: () => clock, ...opts });
      return { usage, engine: createDiscoveryEngine(createMemorySource({ tools: tools() }), { skills: [], usage }) };
    };
    /** One round: discover, then the tool call; waits for the write. */
    const round = async (
      s: ReturnType<typeof setup>,
      c: GatewayContext,
      request: string,
      server: string,
      tool: string,
    ): Promise<void> => {
      await s.engine.discover(c, { request });
      clock += 1000;
      s.usage.toolCalled(c, { server, tool, ok: true });
      await s.usage.settled();
    };
    const rows = async (orgId: string) =>
      (await knexUsageStore.load(ctx(orgId))).map((r) => `${r.request} → ${r.server}/${r.tool} ×${r.uses}`);

    beforeEach(async () => {
      store = await createTestStore(kind);
      orgA = (await createOrganization(store.db, { name: 'A' })).id;
      orgB = (await createOrganization(store.db, { name: 'B' })).id;
      clock = Date.parse('2025-01-01T00:00:00Z');
      logged.length = 0;
    });
    afterEach(async () => {
      await store.close();
    });

    it('a request the words miss ranks the used tool first after three uses; a close variant too; not in another organisation', async () => {
      const s = setup();
      const a = ctx(orgA, 'credential:a1');
      expect(top(await s.engine.discover(a, { request: MISS }))).to.not.equal('slack/slack_send_message');
      const otherBefore = await s.engine.discover(ctx(orgB), { request: MISS });
      for (let i = 0; i < 3; i++) await round(s, a, MISS, 'slack', 'slack_send_message');
      const after = await s.engine.discover(a, { request: MISS });
      expect(top(after)).to.equal('slack/slack_send_message');
      expect(after.tools[0]!.confidence).to.be.at.least(0.85).and.below(1);
      expect(top(await s.engine.discover(a, { request: MISS_VARIANT }))).to.equal('slack/slack_send_message');
      // Another caller of the same organisation benefits; another organisation does not.
      expect(top(await s.engine.discover(ctx(orgA, 'credential:a2'), { request: MISS }))).to.equal(
        'slack/slack_send_message',
      );
      expect(await s.engine.discover(ctx(orgB), { request: MISS })).to.deep.equal(otherBefore);
      // An unrelated request is untouched.
      expect(top(await s.engine.discover(a, { request: 'create a jira issue' }))).to.equal('jira/jira_create_issue');
      expect(await rows(orgA)).to.deep.equal([`${MISS} → slack/slack_send_message ×3`]);
      expect(await rows(orgB)).to.deep.equal([]);
    });

    it('lifts a tool the words found lower, and capability_details shows what was learned for that organisation only', async () => {
      const s = setup();
      const a = ctx(orgA);
      const before = await s.engine.discover(a, { request: LOW });
      expect(top(before)).to.not.equal('stripe/stripe_create_refund');
      for (let i = 0; i < 3; i++) await round(s, a, LOW, 'stripe', 'stripe_create_refund');
      expect(top(await s.engine.discover(a, { request: LOW }))).to.equal('stripe/stripe_create_refund');
      const mine: DetailsResult = await s.engine.details(a, {
        items: ['stripe_create_refund', 'stripe_list_invoices'],
      });
      expect(mine.items[0]!.learned).to.deep.equal({
        uses: 3,
        lastUsedAt: new Date(clock).toISOString(),
        requests: [LOW],
      });
      expect(mine.items[1]).to.not.have.property('learned');
      const theirs = await s.engine.details(ctx(orgB), { items: ['stripe_create_refund'] });
      expect(theirs.items[0]).to.not.have.property('learned');
    });

    it('a call after the window is not recorded, and clears the pending discover', async () => {
      const s = setup();
      const a = ctx(orgA, 'c');
      await s.engine.discover(a, { request: MISS });
      clock += LEARNING_WINDOW_MS + 1;
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
      await s.usage.settled();
      expect(await rows(orgA)).to.deep.equal([]);
      // Just inside the window counts.
      await s.engine.discover(a, { request: MISS });
      clock += LEARNING_WINDOW_MS;
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
      await s.usage.settled();
      expect(await rows(orgA)).to.have.length(1);
    });

    it('a failed call is not recorded and keeps the discover pending; a later unrelated call is not attributed', async () => {
      const s = setup();
      const a = ctx(orgA, 'c');
      await s.engine.discover(a, { request: MISS });
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: false });
      await s.usage.settled();
      expect(await rows(orgA)).to.deep.equal([]);
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
      s.usage.toolCalled(a, { server: 'jira', tool: 'jira_create_issue', ok: true });
      await s.usage.settled();
      expect(await rows(orgA)).to.deep.equal([`${MISS} → slack/slack_send_message ×1`]);
    });

    it('discovery tools, gateway_invoke itself and listServers are not uses; callers are kept apart', async () => {
      const s = setup();
      const a1 = ctx(orgA, 'credential:1');
      await s.engine.discover(a1, { request: MISS });
      s.usage.toolCalled(a1, { server: 'svc-sidekick', tool: 'capability_details', ok: true });
      s.usage.toolCalled(a1, { server: 'gateway', tool: 'gateway_invoke', ok: true });
      s.usage.toolCalled(a1, { server: 'mcp', tool: 'listServers', ok: true });
      // Another caller of the organisation, and the organisation without a caller id, are not this caller.
      s.usage.toolCalled(ctx(orgA, 'credential:2'), { server: 'jira', tool: 'jira_create_issue', ok: true });
      s.usage.toolCalled(ctx(orgA), { server: 'jira', tool: 'jira_create_issue', ok: true });
      s.usage.toolCalled(ctx(orgB, 'credential:1'), { server: 'jira', tool: 'jira_create_issue', ok: true });
      await s.usage.settled();
      expect(await rows(orgA)).to.deep.equal([]);
      s.usage.toolCalled(a1, { server: 'slack', tool: 'slack_send_message', ok: true });
      await s.usage.settled();
      expect(await rows(orgA)).to.deep.equal([`${MISS} → slack/slack_send_message ×1`]);
    });

    it('keeps at most maxRowsPerOrg rows per organisation, least recently used removed, in the store and in memory', async () => {
      const s = setup({ maxRowsPerOrg: 3 });
      await round(s, ctx(orgB), MISS, 'slack', 'slack_send_message');
      const requests = [
        'archive the old tickets',
        'book a meeting room',
        'rotate the api keys',
        'print the weekly report',
        'order more coffee',
      ];
      for (const r of requests) await round(s, ctx(orgA), r, 'jira', 'jira_create_issue');
      const kept = await rows(orgA);
      expect(kept).to.have.members(requests.slice(2).map((r) => `${r} → jira/jira_create_issue ×1`));
      const details = await s.engine.details(ctx(orgA), { items: ['jira_create_issue'] });
      expect(details.items[0]!.learned).to.deep.include({ uses: 3, requests: requests.slice(2).reverse() });
      expect(await rows(orgB)).to.have.length(1);
    });

    it('another process sharing the store sees the uses after its reload interval', async () => {
      const one = setup();
      const two = setup({ reloadMs: 1000 });
      const a = ctx(orgA);
      expect(top(await two.engine.discover(a, { request: MISS }))).to.not.equal('slack/slack_send_message');
      for (let i = 0; i < 3; i++) await round(one, a, MISS, 'slack', 'slack_send_message');
      clock += 1000;
      await two.engine.discover(a, { request: MISS }); // starts the background reload
      const deadline = Date.now() + 5000;
      while (
        top(await two.engine.discover(a, { request: MISS })) !== 'slack/slack_send_message' &&
        Date.now() < deadline
      ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(top(await two.engine.discover(a, { request: MISS }))).to.equal('slack/slack_send_message');
    });

    it('a store that fails neither fails the discover nor the call: ranking goes on without learning, and it is logged', async () => {
      const s = setup();
      const a = ctx(orgA);
      const before = await s.engine.discover(a, { request: MISS });
      await store.db.schema.dropTable('discovery_usage');
      s.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
      await s.usage.settled();
      const fresh = setup();
      expect(await fresh.engine.discover(a, { request: MISS })).to.deep.equal(before);
      expect(logged.join('\n'))
        .to.match(/a use could not be stored/)
        .and.to.match(/remembered uses could not be loaded/);
    });

    it('an optional vector similarity matches requests that share no words', async () => {
      const s = setup({ similar: (x, y) => (x === 'notify the crew' && y === MISS ? 0.95 : undefined) });
      const a = ctx(orgA);
      for (let i = 0; i < 3; i++) await round(s, a, MISS, 'slack', 'slack_send_message');
      expect(top(await s.engine.discover(a, { request: 'notify the crew' }))).to.equal('slack/slack_send_message');
    });
  });
}

describe('discovery learning across processes: pending discovers in Redis (usage-pending.ts)', function () {
  this.timeout(30_000);
  const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  let store: TestStore;
  let orgA: string;
  let clock: number;
  const clients: RedisClient[] = [];
  const logged: string[] = [];
  const log = pino(
    { level: 'warn' },
    new Writable({
      write(chunk: Buffer, _e, cb) {
        logged.push(chunk.toString());
        cb();
      },
    }),
  );
  const prefix = `sy-learn-${process.pid}-${Date.now()}`;

  const ctx = (orgId: string, callerId?: string): GatewayContext => ({
    services: { db: store.db, config: loadConfig({ DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' }), log },
    log,
    orgId,
    forwardedHeaders: {},
    signal: new AbortController().signal,
    ...(callerId ? { callerId } : {}),
  });
  /** One service process: its own Redis connection, engine and usage memory, the shared store. */
  const processOf = async (): Promise<{ usage: UsageMemory; engine: DiscoveryEngine; redis: RedisClient }> => {
    const redis = await connectRedis(REDIS_URL, log);
    clients.push(redis);
    const usage = new UsageMemory({ now: () => clock, shared: new RedisPending(redis, prefix, log) });
    return {
      usage,
      redis,
      engine: createDiscoveryEngine(createMemorySource({ tools: tools() }), { skills: [], usage }),
    };
  };
  const rows = async (orgId: string) =>
    (await knexUsageStore.load(ctx(orgId))).map((r) => `${r.request} → ${r.server}/${r.tool} ×${r.uses}`);

  beforeEach(async () => {
    store = await createTestStore(kinds[0]!);
    orgA = (await createOrganization(store.db, { name: 'A' })).id;
    clock = Date.now();
    logged.length = 0;
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) if (c.isOpen) await c.close();
    await store.close();
  });

  it('a discover served by one process and its call by another record the pair once', async () => {
    const one = await processOf();
    const two = await processOf();
    const a = ctx(orgA, 'credential:1');
    await one.engine.discover(a, { request: MISS });
    two.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
    // The process takes the discover (GETDEL) right after the call, before the caller could have
    // its answer and make another call; the same caller's next call, on either process, is then
    // not attributed to the same discover again.
    await two.usage.settled();
    one.usage.toolCalled(a, { server: 'jira', tool: 'jira_create_issue', ok: true });
    await Promise.all([one.usage.settled(), two.usage.settled()]);
    expect(await rows(orgA)).to.deep.equal([`${MISS} → slack/slack_send_message ×1`]);
    // The key is gone from Redis; another caller's discover is its own.
    expect(await one.redis.keys(`${prefix}:*`)).to.deep.equal([]);
    await two.engine.discover(ctx(orgA, 'credential:2'), { request: 'archive the old tickets' });
    one.usage.toolCalled(a, { server: 'jira', tool: 'jira_create_issue', ok: true });
    await one.usage.settled();
    expect(await rows(orgA)).to.have.length(1);
    one.usage.toolCalled(ctx(orgA, 'credential:2'), { server: 'jira', tool: 'jira_create_issue', ok: true });
    await one.usage.settled();
    expect(await rows(orgA)).to.have.length(2);
  });

  it('keeps the window and the failed-call rule; the key expires with the window', async () => {
    const one = await processOf();
    const two = await processOf();
    const a = ctx(orgA, 'credential:1');
    await one.engine.discover(a, { request: MISS });
    const ttl = await one.redis.pTTL(
      `${prefix}:discovery:pending:${encodeURIComponent(orgA)}:${encodeURIComponent('credential:1')}`,
    );
    expect(ttl).to.be.within(LEARNING_WINDOW_MS - 5_000, LEARNING_WINDOW_MS);
    two.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: false }); // failed: neither counts nor clears
    await two.usage.settled();
    clock += LEARNING_WINDOW_MS + 1; // past the window by the clock of the process that serves the call
    two.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
    await two.usage.settled();
    expect(await rows(orgA)).to.deep.equal([]);
    expect(await one.redis.keys(`${prefix}:*`)).to.deep.equal([]);
  });

  it('without a connected Redis, discovers and calls go on and nothing is learned (logged)', async () => {
    const one = await processOf();
    await one.redis.close();
    const a = ctx(orgA, 'credential:1');
    const res = await one.engine.discover(a, { request: 'send a slack message' });
    expect(res.tools[0]?.name).to.equal('slack_send_message');
    one.usage.toolCalled(a, { server: 'slack', tool: 'slack_send_message', ok: true });
    await one.usage.settled();
    expect(await rows(orgA)).to.deep.equal([]);
    expect(logged.join('\n')).to.match(/could not note a pending discover in Redis/);
  });
});
