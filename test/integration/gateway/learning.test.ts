/**
 * Discovery learns from use (issue 13 part 3; src/servers/sidekick/README.md "Learning from
 * use") through the running service: a paraphrase that misses at first ranks the tool callers
 * of the organisation actually used first after three rounds of capabilities_discover →
 * tools/call (directly on the server path, through gateway_invoke, and with the MCP SDK
 * client), capability_details says so, and another organisation sees nothing of it. Failed and
 * unrelated calls are not recorded, DISCOVERY_LEARNING=false records nothing, and a failing
 * store never fails the tool call. Runs on sqlite and, when reachable, PostgreSQL; with
 * REDIS_URL, a discover and its call served by two service processes are learned too.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { startTestServer, createTestOrg, type TestServer, type TestOrg } from '../../helpers/server.js';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { storeKinds } from '../../helpers/store.js';
import { callTool, createConnection, registerServer, sdkClient } from './helpers.js';

const kinds = await storeKinds();

/** A stateless MCP server on loopback: a small CRM whose `contact_merge` always fails. */
async function startCrm(): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const build = (): McpServer => {
    const s = new McpServer({ name: 'crm', version: '1.0.0' });
    s.registerTool(
      'contact_lookup',
      {
        description: 'Look up a contact by email address and return their name, company and phone number.',
        inputSchema: { email: z.string() },
      },
      ({ email }) => {
        calls.push('contact_lookup');
        return { content: [{ type: 'text', text: `found ${email}` }], structuredContent: { name: 'Ada', email } };
      },
    );
    s.registerTool(
      'deal_create',
      { description: 'Create a sales deal in the pipeline for a company.', inputSchema: { company: z.string() } },
      () => {
        calls.push('deal_create');
        return { content: [{ type: 'text', text: 'deal created' }] };
      },
    );
    s.registerTool('contact_merge', { description: 'Merge two duplicate contacts into one.', inputSchema: {} }, () => {
      calls.push('contact_merge');
      return { content: [{ type: 'text', text: 'cannot merge' }], isError: true };
    });
    return s;
  };
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const PARAPHRASE = 'who is the sender of this message';
const VARIANT = 'who is the sender of this email message';

interface Found {
  tools: { name: string; serverName: string; confidence: number }[];
}

async function discover(server: TestServer, org: TestOrg, request: string, path = 'svc-sidekick'): Promise<Found> {
  const res = await callTool(server, org.token, path, 'capabilities_discover', { request });
  return res.structuredContent as Found;
}

const top = (f: Found): string => (f.tools[0] ? `${f.tools[0].serverName}/${f.tools[0].name}` : '(none)');

async function registerCrm(server: TestServer, org: TestOrg, url: string): Promise<void> {
  await registerServer(server, org, {
    path: 'crm',
    name: 'CRM',
    description: 'Customer records: contacts, companies and deals.',
    service_key: 'crm',
    upstream: { type: 'mcp', url, transport: 'streamable-http' },
    auth: { scheme: 'none' },
  });
  await createConnection(server, org, { name: 'CRM (test)', service_key: 'crm' });
}

for (const kind of kinds) {
  describe(`discovery learning from use through the gateway (${kind})`, function () {
    this.timeout(60_000);
    let crm: Awaited<ReturnType<typeof startCrm>>;
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;

    const rows = async (
      orgId?: string,
    ): Promise<{ org_id: string; request: string; server: string; tool: string; uses: number }[]> => {
      await server.app.services.gateway.usage?.settled();
      const q = server.store.db('discovery_usage').select('org_id', 'request', 'server', 'tool', 'uses').orderBy('id');
      return (
        (await (orgId ? q.where({ org_id: orgId }) : q)) as {
          org_id: string;
          request: string;
          server: string;
          tool: string;
          uses: number | string;
        }[]
      ).map((r) => ({ ...r, uses: Number(r.uses) }));
    };

    before(async () => {
      crm = await startCrm();
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Learning org');
      other = await createTestOrg(server, 'Other org');
      await registerCrm(server, org, crm.url);
      await registerCrm(server, other, crm.url);
    });
    after(async () => {
      server?.assertResponsesValid();
      await server?.close();
      await crm?.close();
    });

    it('a paraphrase that misses at first ranks the used tool first after three uses; another organisation is unchanged', async () => {
      const before = await discover(server, org, PARAPHRASE);
      expect(top(before), JSON.stringify(before.tools.slice(0, 3))).to.not.equal('crm/contact_lookup');
      const otherBefore = await discover(server, other, PARAPHRASE);

      // Round 1: discover on svc-sidekick, a failing call (not counted), then the tool on its server path.
      await discover(server, org, PARAPHRASE);
      expect((await callTool(server, org.token, 'crm', 'contact_merge', {})).isError).to.equal(true);
      expect(await rows()).to.deep.equal([]);
      expect(
        (await callTool(server, org.token, 'crm', 'contact_lookup', { email: 'ada@example.com' })).isError,
      ).to.not.equal(true);
      // A later call without a new discover is not attributed to the request.
      await callTool(server, org.token, 'crm', 'deal_create', { company: 'Acme' });
      expect((await rows()).map((r) => [r.tool, r.uses])).to.deep.equal([['contact_lookup', 1]]);

      // Round 2: the fixed tool set on `gateway`; gateway_invoke counts as its target.
      await discover(server, org, PARAPHRASE, 'gateway');
      const invoked = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'crm',
        tool: 'contact_lookup',
        arguments: { email: 'ada@example.com' },
      });
      expect(invoked.isError).to.not.equal(true);

      // Round 3: the MCP SDK client, gateway_invoke with its arguments as a JSON string.
      const client = await sdkClient(server, org, 'gateway');
      try {
        await client.callTool({ name: 'capabilities_discover', arguments: { request: PARAPHRASE } });
        const res = await client.callTool({
          name: 'gateway_invoke',
          arguments: { server: 'crm', tool: 'contact_lookup', arguments: JSON.stringify({ email: 'ada@example.com' }) },
        });
        expect(res.isError).to.not.equal(true);
      } finally {
        await client.close();
      }
      expect(await rows()).to.deep.equal([
        { org_id: org.orgId, request: PARAPHRASE, server: 'crm', tool: 'contact_lookup', uses: 3 },
      ]);

      const after = await discover(server, org, PARAPHRASE);
      expect(top(after), JSON.stringify(after.tools.slice(0, 3))).to.equal('crm/contact_lookup');
      expect(after.tools[0]!.confidence).to.be.at.least(0.85).and.below(1);
      const variant = await discover(server, org, VARIANT, 'gateway');
      expect(top(variant), JSON.stringify(variant.tools.slice(0, 3))).to.equal('crm/contact_lookup');
      expect(await discover(server, other, PARAPHRASE)).to.deep.equal(otherBefore);
    });

    it('capability_details says what was learned, for this organisation only', async () => {
      const mine = await callTool(server, org.token, 'svc-sidekick', 'capability_details', {
        items: ['contact_lookup', 'deal_create'],
      });
      const [lookup, deal] = mine.structuredContent.items as {
        name: string;
        learned?: { uses: number; lastUsedAt: string; requests: string[] };
      }[];
      expect(lookup!.learned).to.include({ uses: 3 });
      expect(lookup!.learned!.requests).to.deep.equal([PARAPHRASE]);
      expect(Date.parse(lookup!.learned!.lastUsedAt)).to.be.closeTo(Date.now(), 60_000);
      expect(deal).to.not.have.property('learned');
      const theirs = await callTool(server, other.token, 'gateway', 'capability_details', {
        items: ['contact_lookup'],
      });
      expect(theirs.structuredContent.items[0]).to.not.have.property('learned');
    });

    it('a store that fails does not fail the tool call (the use is lost and logged)', async () => {
      await server.store.db.schema.dropTable('discovery_usage');
      try {
        await discover(server, other, PARAPHRASE);
        const res = await callTool(server, other.token, 'crm', 'contact_lookup', { email: 'bob@example.com' });
        expect(res.isError).to.not.equal(true);
        expect(res.structuredContent).to.deep.include({ email: 'bob@example.com' });
        await server.app.services.gateway.usage!.settled();
        // Ranking still answers (the organisation's rows could not be loaded: none are used).
        expect((await discover(server, other, 'look up a contact by email')).tools.length).to.be.above(0);
      } finally {
        const { up } = await import('../../../src/storage/migrations/010_discovery_usage.js');
        await up(server.store.db);
      }
    });
  });
}

describe(`discovery learning across two service processes on one store and Redis (${kinds.includes('pg') ? 'pg' : 'sqlite'})`, function () {
  this.timeout(60_000);
  const env = {
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `sy-learning-${process.pid}-${Date.now()}`,
  };
  let crm: Awaited<ReturnType<typeof startCrm>>;
  let one: TestServer;
  let two: TestServer;
  /** Looks at the pending discovers the two processes share. */
  let redis: RedisClient;
  const pendingKeys = (): Promise<string[]> => redis.keys(`${env.REDIS_PREFIX}:discovery:pending:*`);
  let org: TestOrg;

  before(async () => {
    crm = await startCrm();
    one = await startTestServer(kinds.includes('pg') ? 'pg' : 'sqlite', env);
    org = await createTestOrg(one, 'Learning org');
    await registerCrm(one, org, crm.url);
    // Behind one load balancer: the same public URL (the tokens' issuer and audience). Started
    // once the server is registered: a process that read the organisation's servers before
    // (its start-up pre-warm does) sees the registration only after REVOCATION_CACHE_MS (2 s),
    // and the rounds below take less than that.
    two = await startTestServer(kinds.includes('pg') ? 'pg' : 'sqlite', { ...env, PUBLIC_URL: one.baseUrl }, one.store);
    redis = await connectRedis(env.REDIS_URL, one.app.services.log);
  });
  after(async () => {
    one?.assertResponsesValid();
    two?.assertResponsesValid();
    await redis?.close();
    await two?.close();
    await one?.close();
    await crm?.close();
  });

  it('a discover answered by one process and the call by the other are learned, once each', async () => {
    const before = await discover(two, org, PARAPHRASE);
    expect(top(before)).to.not.equal('crm/contact_lookup');
    for (let i = 0; i < 3; i++) {
      const [discovers, calls] = i % 2 ? [two, one] : [one, two];
      await discover(discovers, org, PARAPHRASE);
      expect(await pendingKeys()).to.have.length(1);
      const lookup = await callTool(calls, org.token, 'crm', 'contact_lookup', { email: 'ada@example.com' });
      expect(lookup, `round ${i}: ${JSON.stringify(lookup)}`).to.have.property('content');
      expect(lookup.isError).to.not.equal(true);
      // The call's process takes the discover from Redis right after answering (GETDEL, not
      // awaited by the call); once it has, the caller's next call cannot take it again.
      await calls.app.services.gateway.usage!.settled();
      expect(await pendingKeys()).to.deep.equal([]);
      // A second call on the process that answered the discover is not the same use again.
      const deal = await callTool(discovers, org.token, 'crm', 'deal_create', { company: 'Acme' });
      expect(deal, `round ${i}: ${JSON.stringify(deal)}`).to.have.property('content');
      await Promise.all([one.app.services.gateway.usage!.settled(), two.app.services.gateway.usage!.settled()]);
    }
    const rows = await one.store.db('discovery_usage').select('request', 'server', 'tool', 'uses');
    expect(rows.map((r: { tool: string; uses: number | string }) => [r.tool, Number(r.uses)])).to.deep.equal([
      ['contact_lookup', 3],
    ]);
    // A process sees the other's writes after its reload interval (30 s); the one that served the
    // last call has its own two uses at once, enough to rank the tool first.
    const after = await discover(two, org, PARAPHRASE);
    expect(top(after), JSON.stringify(after.tools.slice(0, 3))).to.equal('crm/contact_lookup');
  });
});

describe('discovery learning switched off (DISCOVERY_LEARNING=false)', function () {
  this.timeout(60_000);
  let crm: Awaited<ReturnType<typeof startCrm>>;
  let server: TestServer;
  let org: TestOrg;

  before(async () => {
    crm = await startCrm();
    server = await startTestServer('sqlite', { DISCOVERY_LEARNING: 'false' });
    org = await createTestOrg(server, 'No learning');
    await registerCrm(server, org, crm.url);
  });
  after(async () => {
    server?.assertResponsesValid();
    await server?.close();
    await crm?.close();
  });

  it('records nothing and ranks as before', async () => {
    expect(server.app.services.gateway.usage).to.equal(undefined);
    const before = await discover(server, org, PARAPHRASE);
    for (let i = 0; i < 3; i++) {
      await discover(server, org, PARAPHRASE);
      expect(
        (await callTool(server, org.token, 'crm', 'contact_lookup', { email: 'ada@example.com' })).isError,
      ).to.not.equal(true);
    }
    expect(await server.store.db('discovery_usage').count({ n: '*' }).first()).to.deep.include({ n: 0 });
    expect(await discover(server, org, PARAPHRASE)).to.deep.equal(before);
    const details = await callTool(server, org.token, 'svc-sidekick', 'capability_details', {
      items: ['contact_lookup'],
    });
    expect(details.structuredContent.items[0]).to.not.have.property('learned');
  });
});
