/**
 * GET /v1/chats and GET /v1/chats/{chatId} (openapi/management.yaml `listChats`, `getChat`) on
 * every store this machine has: chats made by a real channel call (the agent runs a real tool
 * through the gateway; the scripted model server is the only stand-in) and by `chat_create`,
 * listed newest first with filters and cursor paging, one transcript with its tool call
 * (arguments, outcome, duration), organisation scoping, and no channel key in any answer.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { startModelServer, reply, type ModelServer } from '../../helpers/model-server.js';
import { callTool } from '../gateway/helpers.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`HTTP: chats and transcripts (${kind})`, function () {
    this.timeout(60_000);
    let model: ModelServer;
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let agentId: string;
    let channel: { triggerId: string; apiKey: string };
    let channelChat: string;
    let titledChat: string;

    const get = (url: string, token = org.token) => call(server.baseUrl, 'GET', url, { token });

    before(async () => {
      model = await startModelServer();
      server = await startTestServer(kind, {
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
      });
      org = await createTestOrg(server, 'Chats org');
      other = await createTestOrg(server, 'Other org');
      const created = await callTool(server, org.token, 'agent-management', 'agent-management_agent_create', {
        name: 'Helper',
        instructions: 'Answer briefly.',
        servers: [{ server: 'svc-sidekick', tools: ['capabilities_discover'] }],
      });
      agentId = (created.structuredContent as { agentId: string }).agentId;
      const ch = await call(server.baseUrl, 'POST', '/v1/channels', { token: org.token, body: { agentId } });
      expect(ch.status, ch.text).to.equal(201);
      channel = ch.body;

      model.setScript([
        reply.toolCall('capabilities_discover', { request: 'send a message to an agent' }),
        reply.text('Use agent_invoke.'),
      ]);
      const sent = await call(server.baseUrl, 'POST', `/ext/triggers/${channel.triggerId}`, {
        headers: { 'x-api-key': channel.apiKey },
        body: { message: 'How do I talk to an agent?' },
      });
      expect(sent.status, sent.text).to.equal(200);
      channelChat = sent.headers.get('x-pf-chat-id')!;
      const titled = await callTool(server, org.token, 'agent-management', 'agent-management_chat_create', {
        agentId,
        title: 'Planning',
      });
      titledChat = (titled.structuredContent as { chatId: string }).chatId;
    });
    after(async () => {
      await server?.close();
      await model?.close();
    });
    afterEach(() => server.assertResponsesValid());

    it("op:listChats lists the organisation's chats newest first, filters by agent and channel, and pages", async () => {
      const res = await get('/v1/chats');
      expect(res.status, res.text).to.equal(200);
      expect(res.body.items.map((c: any) => c.chatId)).to.deep.equal([titledChat, channelChat]);
      expect(res.body.items[0]).to.deep.include({ title: 'Planning', excerpt: null, messageCount: 0, channelId: null });
      expect(res.body.items[1]).to.deep.include({
        agentId,
        channelId: channel.triggerId,
        title: null,
        excerpt: 'How do I talk to an agent?',
        messageCount: 4,
      });
      const byChannel = await get(`/v1/chats?channelId=${channel.triggerId}`);
      expect(byChannel.body.items.map((c: any) => c.chatId)).to.deep.equal([channelChat]);
      const byAgent = await get(`/v1/chats?agentId=${agentId}`);
      expect(byAgent.body.items).to.have.length(2);
      expect((await get('/v1/chats?agentId=agt_00000000000000000000000000000000')).body.items).to.deep.equal([]);
      const page1 = await get('/v1/chats?limit=1');
      expect(page1.body.items.map((c: any) => c.chatId)).to.deep.equal([titledChat]);
      const page2 = await get(`/v1/chats?limit=1&cursor=${page1.body.nextCursor}`);
      expect(page2.body.items.map((c: any) => c.chatId)).to.deep.equal([channelChat]);
      expect(page2.body.nextCursor).to.equal(null);
      const foreign = await get('/v1/chats?cursor=eyJsIjoicnVucyIsImEiOiJ4In0');
      expect([foreign.status, foreign.body.error]).to.deep.equal([400, 'invalid_cursor']);
      expect((await get('/v1/chats', other.token)).body.items).to.deep.equal([]);
      expect(res.text).to.not.include(channel.apiKey);
    });

    it('op:getChat shows the transcript in order with the tool call, its arguments, outcome and duration', async () => {
      const res = await get(`/v1/chats/${channelChat}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.text).to.not.include(channel.apiKey);
      const { messages } = res.body;
      expect(messages.map((m: any) => [m.seq, m.role, m.text])).to.deep.equal([
        [1, 'user', 'How do I talk to an agent?'],
        [2, 'assistant', null],
        [3, 'tool', null],
        [4, 'assistant', 'Use agent_invoke.'],
      ]);
      const [made] = messages[1].toolCalls;
      expect(made).to.deep.include({
        name: 'capabilities_discover',
        arguments: { request: 'send a message to an agent' },
        status: 'ok',
        error: null,
      });
      expect(made.result).to.include('agent-management_agent_invoke');
      expect(made.durationMs).to.be.a('number').and.at.least(0);
      expect(messages[2].toolCalls).to.deep.equal([made]);
      expect(messages[0].toolCalls).to.deep.equal([]);
      expect(res.body).to.deep.include({ chatId: channelChat, messageCount: 4, channelId: channel.triggerId });
    });

    it("op:getChat answers 404 not_found for another organisation's chat, an unknown or malformed id; 401 without a token", async () => {
      const theirs = await get(`/v1/chats/${channelChat}`, other.token);
      expect([theirs.status, theirs.body.error]).to.deep.equal([404, 'not_found']);
      expect(theirs.text).to.not.include('How do I talk');
      const unknown = await get('/v1/chats/chat_00000000000000000000000000000000');
      expect([unknown.status, unknown.body.error]).to.deep.equal([404, 'not_found']);
      expect((await get('/v1/chats/not-a-chat')).status).to.equal(404);
      expect((await call(server.baseUrl, 'GET', `/v1/chats/${channelChat}`)).status).to.equal(401);
    });
  });
}
