/**
 * Agent and agent API channel management over real HTTP (openapi/management.yaml /v1/agents,
 * /v1/channels), every response checked against the OpenAPI bundle, on every store this
 * machine has.
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { verifyChannelKey } from '../../../src/agents/channels.js';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';

const kinds = await storeKinds();
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const agentBody = {
  name: 'Support triage',
  instructions: 'Label each message as bug, billing or other.',
  servers: [{ server: 'svc-sidekick' }],
};

for (const kind of kinds) {
  describe(`agents and channels over HTTP (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    const api = <T = any>(
      method: string,
      path: string,
      opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
    ) => call<T>(server.baseUrl, method, path, { token: org.token, ...opts });
    const newAgent = async (body: Record<string, unknown> = agentBody) => {
      const res = await api('POST', '/v1/agents', { body });
      expect(res.status, res.text).to.equal(201);
      return res.body as { agentId: string; version: number };
    };
    const newChannel = async (agentId: string, body: Record<string, unknown> = {}) => {
      const res = await api('POST', '/v1/channels', { body: { agentId, ...body } });
      expect(res.status, res.text).to.equal(201);
      return { channel: res.body, etag: res.headers.get('etag')! };
    };

    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('op:createAgent op:getAgent op:listAgents — defaults, ETag, pages, organisation scope', async () => {
      const created = await api('POST', '/v1/agents', {
        body: { ...agentBody, introMessage: 'Hi! Paste a message.', model: 'openai/gpt-4o-mini' },
      });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('etag')).to.equal('"1"');
      expect(created.body.agentId).to.match(/^agt_[0-9a-f]{32}$/);
      expect(created.body).to.deep.include({
        name: 'Support triage',
        description: '',
        servers: [{ server: 'svc-sidekick' }],
        model: 'openai/gpt-4o-mini',
        outputSchema: null,
        introMessage: 'Hi! Paste a message.',
        version: 1,
        releaseVersion: null,
        isPublicTemplate: false,
      });
      const got = await api('GET', `/v1/agents/${created.body.agentId}`);
      expect([got.status, got.headers.get('etag')]).to.deep.equal([200, '"1"']);
      expect(got.body).to.deep.equal(created.body);
      const second = await newAgent({
        name: 'Extractor',
        instructions: 'Extract the invoice number.',
        outputSchema: { type: 'object', properties: { n: { type: 'string' } } },
      });
      const page1 = await api('GET', '/v1/agents?limit=1');
      expect(page1.body.items.map((a: { agentId: string }) => a.agentId)).to.deep.equal([created.body.agentId]);
      expect(page1.body.nextCursor).to.be.a('string');
      const page2 = await api('GET', `/v1/agents?limit=1&cursor=${page1.body.nextCursor}`);
      expect(page2.body.items.map((a: { agentId: string }) => a.agentId)).to.deep.equal([second.agentId]);
      expect((await api('GET', '/v1/agents', { token: other.token })).body).to.deep.equal({
        items: [],
        nextCursor: null,
      });
      expect((await api('GET', `/v1/agents/${created.body.agentId}`, { token: other.token })).status).to.equal(404);
      expect((await api('GET', '/v1/agents?cursor=abc')).body.error).to.equal('invalid_cursor');
    });

    it('op:createAgent — 400 for unknown fields, bad output schemas, models and server paths; 401 without a token', async () => {
      const bad = async (body: Record<string, unknown>, path: string) => {
        const res = await api('POST', '/v1/agents', { body });
        expect([res.status, res.body.error], res.text).to.deep.equal([400, 'invalid_request']);
        expect(
          res.body.details.map((d: { path: string }) => d.path),
          res.text,
        ).to.include(path);
        return res;
      };
      const unknown = await bad({ ...agentBody, colour: 'blue' }, '/');
      expect(unknown.body.details[0].message).to.contain('unknown field "colour"');
      await bad({ ...agentBody, outputSchema: { type: 'string' } }, '/outputSchema');
      await bad(
        { ...agentBody, outputSchema: { type: 'object', properties: { n: { type: 'no-such-type' } } } },
        '/outputSchema',
      );
      await bad({ ...agentBody, model: 'gpt-4o' }, '/model');
      const unknownServer = await bad({ ...agentBody, servers: [{ server: 'no-such-server' }] }, '/servers/0/server');
      expect(unknownServer.body.message).to.contain('no-such-server');
      await bad({ ...agentBody, servers: [{ server: 'svc-sidekick', tools: ['no_such_tool'] }] }, '/servers/0/tools');
      await bad(
        { ...agentBody, servers: [{ server: 'svc-sidekick' }, { server: 'svc-sidekick' }] },
        '/servers/1/server',
      );
      const anonymous = await call(server.baseUrl, 'POST', '/v1/agents', { body: agentBody });
      expect([anonymous.status, anonymous.body.error]).to.deep.equal([401, 'missing_token']);
      expect((await call(server.baseUrl, 'GET', '/v1/agents', { token: 'not-a-token' })).status).to.equal(401);
    });

    it('op:createAgent — an application server path counts only in its own organisation', async () => {
      const reg = await api('POST', '/v1/servers', {
        body: {
          path: 'crm',
          name: 'CRM',
          service_key: 'crm',
          upstream: { type: 'mcp', url: 'https://mcp.example.com/crm', transport: 'streamable-http' },
          auth: { scheme: 'bearer' },
        },
      });
      expect(reg.status, reg.text).to.equal(201);
      expect(
        (await api('POST', '/v1/agents', { body: { ...agentBody, servers: [{ server: 'crm' }] } })).status,
      ).to.equal(201);
      const foreign = await api('POST', '/v1/agents', {
        token: other.token,
        body: { ...agentBody, servers: [{ server: 'crm' }] },
      });
      expect([foreign.status, foreign.body.details?.[0]?.path]).to.deep.equal([400, '/servers/0/server']);
    });

    it('op:updateAgent — If-Match required (428), stale (412), partial update with nulls, checks, organisation scope', async () => {
      const agent = await newAgent({ ...agentBody, model: 'anthropic/claude-sonnet-4', introMessage: 'Hello' });
      const path = `/v1/agents/${agent.agentId}`;
      const missing = await api('PATCH', path, { body: { name: 'Renamed' } });
      expect([missing.status, missing.body.error]).to.deep.equal([428, 'precondition_required']);
      const ok = await api('PATCH', path, {
        body: { name: 'Renamed', model: null, introMessage: null },
        headers: { 'if-match': '"1"' },
      });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.headers.get('etag')).to.equal('"2"');
      expect(ok.body).to.deep.include({
        name: 'Renamed',
        model: null,
        introMessage: null,
        version: 2,
        instructions: agentBody.instructions,
        servers: agentBody.servers,
      });
      const stale = await api('PATCH', path, { body: { name: 'Again' }, headers: { 'if-match': '"1"' } });
      expect([stale.status, stale.body.error, stale.body.details]).to.deep.equal([
        412,
        'version_conflict',
        { currentVersion: 2 },
      ]);
      expect((await api('PATCH', path, { body: { name: 'Again' }, headers: { 'if-match': 'W/"2"' } })).status).to.equal(
        412,
      );
      const badServer = await api('PATCH', path, {
        body: { servers: [{ server: 'nowhere' }] },
        headers: { 'if-match': '"2"' },
      });
      expect([badServer.status, badServer.body.details[0].path]).to.deep.equal([400, '/servers/0/server']);
      const badSchema = await api('PATCH', path, {
        body: { outputSchema: { type: 'array' } },
        headers: { 'if-match': '"2"' },
      });
      expect([badSchema.status, badSchema.body.details[0].path]).to.deep.equal([400, '/outputSchema']);
      expect((await api('PATCH', path, { body: {}, headers: { 'if-match': '"2"' } })).status).to.equal(400);
      expect(
        (await api('PATCH', path, { body: { instructions: 'x' }, headers: { 'if-match': '"2"' }, token: other.token }))
          .status,
      ).to.equal(404);
      expect((await api('GET', path)).body).to.deep.include({ version: 2, name: 'Renamed' });
    });

    it('op:updateAgent op:updateChannel — two concurrent updates with one If-Match: exactly one wins, the other gets 412', async () => {
      const agent = await newAgent();
      const patches = await Promise.all(
        ['One', 'Two'].map((name) =>
          api('PATCH', `/v1/agents/${agent.agentId}`, { body: { name }, headers: { 'if-match': '"1"' } }),
        ),
      );
      expect(patches.map((r) => r.status).sort()).to.deep.equal([200, 412]);
      expect((await api('GET', `/v1/agents/${agent.agentId}`)).body.version).to.equal(2);
      const { channel, etag } = await newChannel(agent.agentId);
      const updates = await Promise.all(
        ['One', 'Two'].map((name) =>
          api('PATCH', `/v1/channels/${channel.triggerId}`, { body: { name }, headers: { 'if-match': etag } }),
        ),
      );
      expect(updates.map((r) => r.status).sort()).to.deep.equal([200, 412]);
    });

    it('op:deleteAgent — If-Match optional (412 when stale); its channels and chats go with it', async () => {
      const agent = await newAgent();
      const { channel } = await newChannel(agent.agentId);
      const created = await api('POST', '/v1/channels', { body: { agentId: agent.agentId } });
      const { db } = server.app.services;
      const now = new Date().toISOString();
      await db('chats').insert({
        id: `chat_${agent.agentId.slice(4)}`,
        org_id: org.orgId,
        agent_id: agent.agentId,
        channel_id: channel.triggerId,
        created_at: now,
        updated_at: now,
      });
      const path = `/v1/agents/${agent.agentId}`;
      expect((await api('DELETE', path, { token: other.token })).status).to.equal(404);
      expect((await api('DELETE', path, { headers: { 'if-match': '"7"' } })).status).to.equal(412);
      expect((await api('DELETE', path, { headers: { 'if-match': '"1"' } })).status).to.equal(204);
      expect((await api('GET', path)).status).to.equal(404);
      expect((await api('DELETE', path)).status).to.equal(404);
      expect((await api('GET', `/v1/channels/${channel.triggerId}`)).status).to.equal(404);
      expect(await verifyChannelKey(db, created.body.triggerId, created.body.apiKey)).to.equal(undefined);
      expect(await db('agent_channels').where({ agent_id: agent.agentId })).to.deep.equal([]);
      expect(await db('chats').where({ agent_id: agent.agentId })).to.deep.equal([]);
    });

    it('op:createChannel — key once, stored hashed; URL; defaults; 400 bad outputFormat or unknown field; 404 unknown or foreign agent', async () => {
      const agent = await newAgent();
      const res = await api('POST', '/v1/channels', {
        body: { agentId: agent.agentId, name: 'Widget', outputFormat: 'markdown' },
      });
      expect(res.status, res.text).to.equal(201);
      const c = res.body;
      expect(c.triggerId).to.match(/^chn_[0-9a-f]{32}$/);
      expect(c.apiKey).to.match(/^syc_/);
      expect(c).to.deep.include({
        agentId: agent.agentId,
        name: 'Widget',
        outputFormat: 'markdown',
        enabled: true,
        keyHint: c.apiKey.slice(-4),
      });
      expect(c.url).to.equal(`${server.baseUrl}/ext/triggers/${c.triggerId}`);
      expect(res.headers.get('etag')).to.equal(`"${Date.parse(c.updatedAt)}"`);
      const row = await server.app.services.db('agent_channels').where({ id: c.triggerId }).first();
      expect(row.key_hash).to.equal(sha256(c.apiKey));
      expect(JSON.stringify(row)).to.not.include(c.apiKey);
      const defaults = await newChannel(agent.agentId);
      expect(defaults.channel).to.deep.include({ name: 'API channel', outputFormat: 'text', enabled: true });
      const badFormat = await api('POST', '/v1/channels', { body: { agentId: agent.agentId, outputFormat: 'html' } });
      expect([badFormat.status, badFormat.body.error]).to.deep.equal([400, 'invalid_request']);
      expect((await api('POST', '/v1/channels', { body: { agentId: agent.agentId, apiKey: 'mine' } })).status).to.equal(
        400,
      );
      expect((await api('POST', '/v1/channels', { body: { agentId: `agt_${'0'.repeat(32)}` } })).status).to.equal(404);
      expect(
        (await api('POST', '/v1/channels', { token: other.token, body: { agentId: agent.agentId } })).status,
      ).to.equal(404);
      expect(
        (await call(server.baseUrl, 'POST', '/v1/channels', { body: { agentId: agent.agentId } })).status,
      ).to.equal(401);
    });

    it('op:getChannel op:listChannels — never the key; agentId filter; organisation scope', async () => {
      const a1 = await newAgent();
      const a2 = await newAgent();
      const one = await newChannel(a1.agentId);
      const two = await newChannel(a2.agentId, { outputFormat: 'json' });
      const got = await api('GET', `/v1/channels/${one.channel.triggerId}`);
      expect(got.status).to.equal(200);
      expect(got.headers.get('etag')).to.equal(one.etag);
      const { apiKey, ...view } = one.channel;
      expect(got.body).to.deep.equal(view);
      expect(got.text).to.not.include(apiKey);
      const byAgent = await api('GET', `/v1/channels?agentId=${a2.agentId}`);
      expect(byAgent.body.items.map((c: { triggerId: string }) => c.triggerId)).to.deep.equal([two.channel.triggerId]);
      const all = await api('GET', '/v1/channels?limit=200');
      expect(all.text).to.not.include(apiKey);
      expect(all.text).to.not.include(two.channel.apiKey);
      expect(
        all.body.items.every((c: Record<string, unknown>) => !('apiKey' in c) && typeof c.keyHint === 'string'),
      ).to.equal(true);
      expect((await api('GET', '/v1/channels', { token: other.token })).body).to.deep.equal({
        items: [],
        nextCursor: null,
      });
      expect((await api('GET', `/v1/channels/${one.channel.triggerId}`, { token: other.token })).status).to.equal(404);
      expect((await api('GET', '/v1/channels/trg_00000000000000000000000000000000')).status).to.equal(404);
      expect((await call(server.baseUrl, 'GET', `/v1/channels/${one.channel.triggerId}`)).status).to.equal(401);
    });

    it('op:updateChannel — If-Match required (428), stale or malformed (412), disable applies to the next call', async () => {
      const agent = await newAgent();
      const { channel, etag } = await newChannel(agent.agentId);
      const path = `/v1/channels/${channel.triggerId}`;
      expect((await api('PATCH', path, { body: { enabled: false } })).status).to.equal(428);
      expect((await api('PATCH', path, { body: { enabled: false }, headers: { 'if-match': '"1"' } })).status).to.equal(
        412,
      );
      expect(
        (await api('PATCH', path, { body: { enabled: false }, headers: { 'if-match': 'nonsense' } })).status,
      ).to.equal(412);
      expect(
        (await api('PATCH', path, { body: { outputFormat: 'xml' }, headers: { 'if-match': etag } })).status,
      ).to.equal(400);
      expect(
        (await api('PATCH', path, { body: { enabled: false }, headers: { 'if-match': etag }, token: other.token }))
          .status,
      ).to.equal(404);
      const off = await api('PATCH', path, {
        body: { enabled: false, outputFormat: 'json', name: 'Off' },
        headers: { 'if-match': etag },
      });
      expect(off.status, off.text).to.equal(200);
      expect(off.body).to.deep.include({ enabled: false, outputFormat: 'json', name: 'Off' });
      expect(off.headers.get('etag')).to.equal(`"${Date.parse(off.body.updatedAt)}"`);
      expect(off.headers.get('etag')).to.not.equal(etag);
      expect(await verifyChannelKey(server.app.services.db, channel.triggerId, channel.apiKey)).to.deep.include({
        enabled: false,
        outputFormat: 'json',
      });
      const stale = await api('PATCH', path, { body: { enabled: true }, headers: { 'if-match': etag } });
      expect([stale.status, stale.body.details]).to.deep.equal([
        412,
        { currentVersion: Date.parse(off.body.updatedAt) },
      ]);
      const on = await api('PATCH', path, {
        body: { enabled: true },
        headers: { 'if-match': off.headers.get('etag')! },
      });
      expect(on.body.enabled).to.equal(true);
    });

    it('op:rotateChannelKey — the old key fails at once, the new one works; hint and ETag change', async () => {
      const agent = await newAgent();
      const { channel, etag } = await newChannel(agent.agentId);
      const { db } = server.app.services;
      expect(await verifyChannelKey(db, channel.triggerId, channel.apiKey)).to.not.equal(undefined);
      const res = await api('POST', `/v1/channels/${channel.triggerId}/rotate-key`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.have.all.keys('triggerId', 'apiKey', 'keyHint', 'rotatedAt');
      expect(res.body).to.deep.include({ triggerId: channel.triggerId, keyHint: res.body.apiKey.slice(-4) });
      expect(res.body.apiKey).to.match(/^syc_/);
      expect(res.body.apiKey).to.not.equal(channel.apiKey);
      expect(await verifyChannelKey(db, channel.triggerId, channel.apiKey), 'old key').to.equal(undefined);
      expect(await verifyChannelKey(db, channel.triggerId, res.body.apiKey), 'new key').to.deep.include({
        keyHint: res.body.keyHint,
      });
      expect((await db('agent_channels').where({ id: channel.triggerId }).first()).key_hash).to.equal(
        sha256(res.body.apiKey),
      );
      const after = await api('GET', `/v1/channels/${channel.triggerId}`);
      expect(after.body).to.deep.include({ keyHint: res.body.keyHint, updatedAt: res.body.rotatedAt });
      expect(after.headers.get('etag')).to.not.equal(etag);
      expect(after.text).to.not.include(res.body.apiKey);
      expect(
        (
          await api('PATCH', `/v1/channels/${channel.triggerId}`, {
            body: { name: 'x' },
            headers: { 'if-match': etag },
          })
        ).status,
        'the old ETag is stale',
      ).to.equal(412);
      expect(
        (await api('POST', `/v1/channels/${channel.triggerId}/rotate-key`, { token: other.token })).status,
      ).to.equal(404);
      expect((await call(server.baseUrl, 'POST', `/v1/channels/${channel.triggerId}/rotate-key`)).status).to.equal(401);
      expect(
        await verifyChannelKey(db, channel.triggerId, res.body.apiKey),
        'a foreign attempt changed nothing',
      ).to.not.equal(undefined);
    });

    it('op:deleteChannel — If-Match optional (412 when stale); the key stops working', async () => {
      const agent = await newAgent();
      const { channel, etag } = await newChannel(agent.agentId);
      const path = `/v1/channels/${channel.triggerId}`;
      expect((await api('DELETE', path, { token: other.token })).status).to.equal(404);
      expect((await api('DELETE', path, { headers: { 'if-match': '"1748782800000"' } })).status).to.equal(412);
      expect((await api('DELETE', path, { headers: { 'if-match': etag } })).status).to.equal(204);
      expect((await api('GET', path)).status).to.equal(404);
      expect((await api('DELETE', path)).status).to.equal(404);
      expect(await verifyChannelKey(server.app.services.db, channel.triggerId, channel.apiKey)).to.equal(undefined);
      expect((await api('GET', `/v1/agents/${agent.agentId}`)).status, 'the agent stays').to.equal(200);
    });
  });
}
