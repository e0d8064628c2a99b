/**
 * Semantic discovery (issue 13 part 2) with a real local embedding model (USE lite) behind an
 * OpenAI-compatible /v1/embeddings on loopback: fusion finds a tool that shares no word with
 * the request, texts are embedded once per content hash and stored (sqlite and PostgreSQL),
 * updates are incremental, and a slow or broken provider never hurts the caller.
 */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import type { CatalogTool, GatewayContext } from '../../../src/gateway/types.js';
import { gatewayServices } from '../../unit/servers/sidekick/fixtures.js';
import {
  createDiscoveryEngine,
  createMemorySource,
  EmbeddingsProvider,
  Semantic,
  type DiscoveryEngine,
} from '../../../src/servers/sidekick/index.js';
import { toBytes } from '../../../src/servers/sidekick/embeddings-store.js';
import { startEmbeddingsServer, type EmbeddingsServer } from '../../helpers/embeddings-server.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { sdkClient } from './helpers.js';

/** Thirty tools of unrelated products, so "unrelated" has a distribution to measure against. */
const TOOLS: [string, string][] = [
  ['get_forecast', 'Current conditions and the forecast for a city: temperature, rain, wind.'],
  ['create_invoice', 'Create an invoice for a customer with line items.'],
  ['send_message', 'Send a message to a channel.'],
  ['list_repositories', 'List the repositories of an organization.'],
  ['create_calendar_event', 'Schedule an event on a calendar with attendees.'],
  ['translate_text', 'Translate text from one language into another.'],
  ['resize_image', 'Resize an image to the given width and height.'],
  ['run_sql', 'Run a SQL statement against the database.'],
  ['create_ticket', 'Open a support ticket for a customer problem.'],
  ['geocode_address', 'Turn a street address into latitude and longitude.'],
  ['upload_file', 'Upload a file to the storage bucket.'],
  ['list_employees', 'List the employees of a department.'],
  ['create_playlist', 'Create a music playlist from songs.'],
  ['book_flight', 'Book a flight between two airports on a date.'],
  ['get_stock_quote', 'Latest share price of a listed company.'],
  ['create_coupon', 'Create a discount code for the store.'],
  ['list_orders', 'List the orders placed in the shop.'],
  ['summarize_document', 'Summarize a long document in a few sentences.'],
  ['create_user', 'Create a user account with an email and a role.'],
  ['delete_branch', 'Delete a branch of a git repository.'],
  ['start_timer', 'Start a time-tracking timer on a task.'],
  ['send_sms', 'Send a text message to a phone number.'],
  ['list_contacts', 'List the contacts of the address book.'],
  ['create_folder', 'Create a folder in the drive.'],
  ['get_exchange_rate', 'Exchange rate between two currencies.'],
  ['restart_server', 'Restart a virtual machine.'],
  ['create_survey', 'Create a survey with questions.'],
  ['list_invoices', 'List the invoices of a customer.'],
  ['track_package', 'Where a parcel is, by its tracking number.'],
  ['create_recipe', 'Save a cooking recipe with ingredients.'],
];

function catalog(overrides: Record<string, string> = {}): CatalogTool[] {
  return TOOLS.map(([name, description]) => ({
    server: 'tools',
    serverTitle: 'Tools',
    serverDescription: 'Assorted tools',
    embedded: false,
    serviceKey: 'tools',
    tool: { name, description: overrides[name] ?? description, inputSchema: { type: 'object', properties: {} } },
  }));
}

/** A request that shares no content word with get_forecast's name or description. */
const PARAPHRASE = 'will I need an umbrella in Lisbon tomorrow';

function context(orgId: string): GatewayContext {
  const log = pino({ level: 'silent' });
  return {
    services: gatewayServices(),
    log,
    orgId,
    forwardedHeaders: {},
    signal: new AbortController().signal,
  };
}

function capture(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

async function rankOf(engine: DiscoveryEngine, orgId: string, request: string, tool: string): Promise<number> {
  const res = await engine.discover(context(orgId), { request, types: ['tool'], limit: 30 });
  return res.tools.findIndex((t) => t.name === tool) + 1;
}

describe('discovery with a local embedding model (issue 13 part 2)', function () {
  this.timeout(120_000);
  let server: EmbeddingsServer;

  before(async () => {
    server = await startEmbeddingsServer();
  });
  after(async () => {
    await server.close();
  });
  beforeEach(() => {
    server.delayMs = 0;
    server.failWith = null;
  });

  function semantic(db: TestStore['db'] | undefined, budgetMs = 5_000, log = pino({ level: 'silent' })): Semantic {
    return new Semantic(
      new EmbeddingsProvider({ url: server.url, model: 'use-lite', apiKey: null, budgetMs, log }),
      log,
      db,
    );
  }

  it('ranks a tool that shares no word with the request in the top 3, which lexical ranking misses', async () => {
    const lexical = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [] });
    expect(await rankOf(lexical, 'org_a', PARAPHRASE, 'get_forecast')).to.equal(0);
    const sem = semantic(undefined);
    const engine = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: sem });
    await engine.discover(context('org_a'), { request: 'warm up' });
    await sem.idleAll();
    const rank = await rankOf(engine, 'org_a', PARAPHRASE, 'get_forecast');
    expect(rank).to.be.within(1, 3);
    // A request that names the tool keeps it first, with the confidence of an exact name.
    const exact = await engine.discover(context('org_a'), { request: 'get_forecast', types: ['tool'] });
    expect(exact.tools[0]).to.include({ name: 'get_forecast', confidence: 1 });
    // Confidence stays in [0, 1] and sorted.
    const res = await engine.discover(context('org_a'), { request: PARAPHRASE, types: ['tool'] });
    const values = res.tools.map((t) => t.confidence);
    expect(values.every((v) => v >= 0 && v <= 1)).to.equal(true);
    expect([...values].sort((a, b) => b - a)).to.deep.equal(values);
  });

  for (const kind of ['sqlite', 'pg'] as const) {
    it(`embeds each text once per content hash, kept in the store and updated incrementally (${kind})`, async function () {
      if (!(await storeKinds()).includes(kind)) this.skip();
      const store = await createTestStore(kind);
      try {
        const first = semantic(store.db);
        const engine = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: first });
        await engine.discover(context('org_a'), { request: 'warm up' });
        await first.idleAll();
        expect(first.status().embedded).to.equal(TOOLS.length);
        const rows = await store
          .db('discovery_embeddings')
          .where({ scope: 'org_a', model: 'use-lite' })
          .count({ n: '*' });
        expect(Number(rows[0]!.n)).to.equal(TOOLS.length);

        // A new process on the same store embeds nothing but the requests.
        const texts = server.texts;
        const second = semantic(store.db);
        const again = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: second });
        await again.discover(context('org_a'), { request: PARAPHRASE });
        await second.idleAll();
        expect(second.status().embedded).to.equal(0);
        expect(server.texts - texts).to.equal(1);
        expect(await rankOf(again, 'org_a', PARAPHRASE, 'get_forecast')).to.be.within(1, 3);

        // One changed description: that text alone is embedded again.
        const source = createMemorySource({ tools: catalog() });
        const third = semantic(store.db);
        const live = createDiscoveryEngine(source, { skills: [], semantic: third });
        await live.discover(context('org_a'), { request: 'warm up' });
        await third.idleAll();
        source.set({ tools: catalog({ create_recipe: 'Save a cooking recipe with its ingredients and steps.' }) });
        await live.discover(context('org_a'), { request: 'warm up' });
        await third.idleAll();
        expect(third.status().embedded).to.equal(1);

        // Another organisation with the same texts has its own rows (every lookup is scoped).
        await live.discover(context('org_b'), { request: 'warm up' });
        await third.idleAll();
        const other = await store.db('discovery_embeddings').where({ scope: 'org_b' }).count({ n: '*' });
        expect(Number(other[0]!.n)).to.equal(TOOLS.length);
      } finally {
        await store.close();
      }
    });
  }

  for (const kind of ['sqlite', 'pg'] as const) {
    it(`deletes the organisation's stored vectors its texts no longer use, once they are a day old (${kind})`, async function () {
      if (!(await storeKinds()).includes(kind)) this.skip();
      const store = await createTestStore(kind);
      try {
        const vector = toBytes(new Float32Array(512).fill(0.04));
        const row = (scope: string, model: string, hash: string, createdAt: string) => ({
          scope,
          model,
          content_hash: hash,
          dims: 512,
          vector,
          created_at: createdAt,
        });
        const old = new Date(Date.now() - 2 * 24 * 3600_000).toISOString();
        const recent = new Date(Date.now() - 3600_000).toISOString();
        await store.db('discovery_embeddings').insert([
          row('org_a', 'use-lite', 'a'.repeat(64), old), // a removed tool's text: deleted
          row('org_a', 'older-model', 'b'.repeat(64), old), // another model's: deleted
          row('org_a', 'use-lite', 'c'.repeat(64), recent), // not a day old: kept
          row('org_b', 'use-lite', 'd'.repeat(64), old), // another organisation's: not touched
          row('*', 'use-lite', 'e'.repeat(64), old), // the service's own texts: not touched
        ]);
        const { log, lines } = capture();
        const sem = semantic(store.db, 5_000, log);
        const engine = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: sem });
        await engine.discover(context('org_a'), { request: 'warm up' });
        await sem.idleAll();
        const hashes = async (scope: string): Promise<string[]> =>
          (await store.db('discovery_embeddings').where({ scope }).select('content_hash')).map(
            (r: { content_hash: string }) => r.content_hash,
          );
        const a = await hashes('org_a');
        expect(a).to.have.length(TOOLS.length + 1);
        expect(a)
          .to.include('c'.repeat(64))
          .and.not.include.members(['a'.repeat(64), 'b'.repeat(64)]);
        expect(await hashes('org_b')).to.deep.equal(['d'.repeat(64)]);
        expect(await hashes('*')).to.include('e'.repeat(64));
        expect(lines.find((l) => l.msg === 'discovery: stored embeddings no longer used were deleted')).to.include({
          orgId: 'org_a',
          deleted: 2,
        });

        // The current texts' rows are kept, even when old: a new process reads them and embeds nothing.
        await store.db('discovery_embeddings').where({ scope: 'org_a' }).update({ created_at: old });
        const next = semantic(store.db);
        const again = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: next });
        await again.discover(context('org_a'), { request: 'warm up' });
        await next.idleAll();
        expect(next.status().embedded).to.equal(0);
        expect(await hashes('org_a')).to.have.length(TOOLS.length);
      } finally {
        await store.close();
      }
    });
  }

  it('a provider slower than the budget: lexical results within the budget, a log line, the state says why', async () => {
    const sem0 = semantic(undefined);
    const engine = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: sem0 });
    await engine.discover(context('org_a'), { request: 'warm up' });
    await sem0.idleAll();
    const { log, lines } = capture();
    const slow = new Semantic(
      new EmbeddingsProvider({ url: server.url, model: 'use-lite', apiKey: null, budgetMs: 150, log }),
      log,
    );
    const engineSlow = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: slow });
    const lexical = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [] });
    server.delayMs = 1_500;
    const started = Date.now();
    const res = await engineSlow.discover(context('org_a'), {
      request: 'send an invoice to the customer',
      types: ['tool'],
    });
    const took = Date.now() - started;
    expect(took).to.be.below(1_000);
    const plain = await lexical.discover(context('org_a'), {
      request: 'send an invoice to the customer',
      types: ['tool'],
    });
    expect(res.tools.map((t) => t.name)).to.deep.equal(plain.tools.map((t) => t.name));
    expect(slow.status()).to.include({ state: 'error' });
    expect(slow.status().error).to.match(/budget of 150 ms/);
    expect(lines.some((l) => l.msg === 'embeddings provider unavailable: discovery ranks lexically')).to.equal(true);
  });

  it('a provider that fails: lexical results, nothing blocks the index, and it recovers when the provider answers again', async () => {
    server.failWith = 503;
    const { log, lines } = capture();
    const sem = new Semantic(
      new EmbeddingsProvider({ url: server.url, model: 'use-lite', apiKey: 'sk-test-secret', budgetMs: 2_000, log }),
      log,
    );
    const engine = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [], semantic: sem });
    const lexical = createDiscoveryEngine(createMemorySource({ tools: catalog() }), { skills: [] });
    const res = await engine.discover(context('org_a'), { request: 'create an invoice', types: ['tool'] });
    const plain = await lexical.discover(context('org_a'), { request: 'create an invoice', types: ['tool'] });
    expect(res.tools.map((t) => [t.name, t.confidence])).to.deep.equal(plain.tools.map((t) => [t.name, t.confidence]));
    await sem.idleAll();
    expect(sem.status()).to.include({ state: 'error' });
    expect(sem.status().error).to.match(/answered 503/);
    expect(JSON.stringify(lines)).not.to.contain('sk-test-secret');
    // Back: the next discover call after the retry delay embeds the documents again.
    server.failWith = null;
    const index = (sem as unknown as { live: Map<string, WeakRef<{ retryAt: number }>> }).live.get('org_a')!.deref()!;
    index.retryAt = 0;
    await engine.discover(context('org_a'), { request: PARAPHRASE });
    await sem.idleAll();
    expect(sem.status().state).to.equal('ok');
    expect(await rankOf(engine, 'org_a', PARAPHRASE, 'get_forecast')).to.be.within(1, 3);
    expect(lines.some((l) => l.msg === 'embeddings provider answers again: semantic ranking resumed')).to.equal(true);
  });

  it('a provider that answers garbage is an error with the reason, and discovery stays lexical', async () => {
    const { log } = capture();
    const fetchImpl = (() =>
      Promise.resolve(new Response(JSON.stringify({ data: [{ embedding: ['x'] }] }), { status: 200 }))) as typeof fetch;
    const provider = new EmbeddingsProvider({
      url: server.url,
      model: 'use-lite',
      apiKey: null,
      budgetMs: 500,
      log,
      fetchImpl,
    });
    expect(await provider.embedQuery('org_a', 'anything')).to.equal(undefined);
    expect(provider.status().error).to.match(/unusable body: embedding 0 is not an array of numbers/);
    const wrongCount = (() =>
      Promise.resolve(new Response(JSON.stringify({ data: [] }), { status: 200 }))) as typeof fetch;
    const p2 = new EmbeddingsProvider({
      url: `${server.url}/embeddings`,
      model: 'use-lite',
      apiKey: null,
      budgetMs: 500,
      log,
      fetchImpl: wrongCount,
    });
    expect(await p2.embedQuery('org_a', 'anything')).to.equal(undefined);
    expect(p2.status().error).to.match(/expected data with 1 embeddings/);
    const closed = new EmbeddingsProvider({
      url: 'http://127.0.0.1:1/v1',
      model: 'use-lite',
      apiKey: null,
      budgetMs: 500,
      log,
    });
    expect(await closed.embedQuery('org_a', 'anything')).to.equal(undefined);
    expect(closed.status().error).to.match(/cannot reach http:\/\/127\.0\.0\.1:1\/v1\/embeddings/);
  });

  describe('through the service', () => {
    let srv: TestServer;
    afterEach(async () => {
      await srv?.close();
    });

    it('/readyz stays ready and shows the provider state as a detail', async () => {
      srv = await startTestServer('sqlite', {
        EMBEDDINGS_URL: server.url,
        EMBEDDINGS_MODEL: 'use-lite',
        EMBEDDINGS_BUDGET_MS: '200',
      });
      let body = (await (await fetch(`${srv.baseUrl}/readyz`)).json()) as {
        status: string;
        details: { embeddings: { state: string; model: string } };
      };
      expect(body.status).to.equal('ready');
      expect(body.details.embeddings).to.include({ model: 'use-lite' });
      srv.app.services.gateway.semantic!.provider.embedQuery('org_a', 'hello');
      server.failWith = 500;
      await srv.app.services.gateway.semantic!.provider.embedQuery('org_a', 'something else');
      const res = await fetch(`${srv.baseUrl}/readyz`);
      expect(res.status).to.equal(200);
      body = (await res.json()) as typeof body;
      expect(body.details.embeddings.state).to.equal('error');
      srv.assertResponsesValid();
    });

    it("one organisation's requests are never answered from another's query cache or embedding under way", async () => {
      srv = await startTestServer('sqlite', {
        EMBEDDINGS_URL: server.url,
        EMBEDDINGS_MODEL: 'use-lite',
        EMBEDDINGS_BUDGET_MS: '200',
      });
      const [a, b] = [await createTestOrg(srv, 'A'), await createTestOrg(srv, 'B')];
      const clients = new Map<TestOrg, Awaited<ReturnType<typeof sdkClient>>>();
      for (const org of [a, b]) clients.set(org, await sdkClient(srv, org, 'svc-sidekick'));
      const discover = async (org: TestOrg, request: string) => {
        const started = Date.now();
        const res = await clients.get(org)!.callTool({ name: 'capabilities_discover', arguments: { request } });
        return { answer: res.structuredContent, ms: Date.now() - started };
      };
      const lateAnswers = async (n: number): Promise<void> => {
        while (server.answered < n) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 100));
      };
      try {
        // Both organisations' documents (the built-in tools) have their vectors first.
        for (const org of [a, b]) await discover(org, 'warm up');
        await srv.app.services.gateway.semantic!.idleAll();
        server.delayMs = 1_000; // slower than the budget: a request not cached is ranked lexically

        const T = 'start a chat with an agent and publish a release';
        const cold = await discover(a, T);
        expect(cold.ms).to.be.at.least(190);
        expect(server.asked(T)).to.equal(1);
        await lateAnswers(server.calls);
        // A's own repeat is served from A's cache: no call, at once, with the vector's scores.
        const warm = await discover(a, T);
        expect(server.asked(T)).to.equal(1);
        expect(warm.answer).to.not.deep.equal(cold.answer);
        // B's identical request is a cold one: the provider is asked again, B waits the budget,
        // and B's answer is the lexical one A had the first time.
        const other = await discover(b, T);
        expect(server.asked(T)).to.equal(2);
        expect(other.ms).to.be.at.least(190);
        expect(other.answer).to.deep.equal(cold.answer);

        // An embedding still under way for A is not shared with B's identical request either.
        const T2 = 'list the chats of an agent';
        await discover(a, T2);
        expect(server.asked(T2)).to.equal(1);
        await discover(b, T2);
        expect(server.asked(T2)).to.equal(2);
        await lateAnswers(server.calls);
      } finally {
        for (const c of clients.values()) await c.close();
      }
    });

    it('without EMBEDDINGS_URL there is no detail and no semantic ranking', async () => {
      srv = await startTestServer('sqlite');
      const body = (await (await fetch(`${srv.baseUrl}/readyz`)).json()) as { details: Record<string, unknown> };
      expect(body.details).not.to.have.property('embeddings');
      expect(srv.app.services.gateway.semantic).to.equal(undefined);
    });
  });
});
