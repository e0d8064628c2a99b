/**
 * The eleven `agent-management_*` tools (spec section 11) over the real gateway, an agent that
 * calls a proxied upstream tool (server-everything) and keeps the image it returned as a chat
 * file, header forwarding from the channel to a remote MCP server, and the workflow `agent`
 * step — on every store this machine has. The model is the scripted OpenAI-compatible server.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { startModelServer, reply, type ModelServer } from '../../helpers/model-server.js';
import { callTool, createConnection, registerServer } from '../gateway/helpers.js';
import { startEverything } from '../upstream/setup.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { deploy } from '../../helpers/runs.js';
import { inspector } from '../../helpers/inspector.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`agent-management tools and agent runtime (${kind})`, function () {
    this.timeout(120_000);
    let model: ModelServer;
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let everything: Awaited<ReturnType<typeof startEverything>>;
    let fixture: McpFixture;
    let pcid: string;

    const tool = async (name: string, args: Record<string, unknown>, as: TestOrg = org) =>
      callTool(server, as.token, 'agent-management', `agent-management_${name}`, args);
    const ok = async (name: string, args: Record<string, unknown>, as: TestOrg = org) => {
      const r = await tool(name, args, as);
      expect(r.isError, JSON.stringify(r)).to.not.equal(true);
      expect(r.structuredContent, JSON.stringify(r)).to.be.an('object');
      return r.structuredContent;
    };

    before(async () => {
      model = await startModelServer();
      everything = await startEverything();
      fixture = await startMcpFixture();
      server = await startTestServer(kind, {
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
        SYNC_WAIT_MS: '5000',
        RUN_CONCURRENCY: '2',
      });
      org = await createTestOrg(server, 'Agents org');
      other = await createTestOrg(server, 'Other org');
      await registerServer(server, org, {
        path: 'everything',
        name: 'Everything',
        description: 'Reference MCP server.',
        service_key: 'everything',
        upstream: { type: 'mcp', url: everything.url, transport: 'streamable-http' },
        auth: { scheme: 'none' },
      });
      pcid = await createConnection(server, org, { name: 'Everything', service_key: 'everything' });
      await registerServer(server, org, {
        path: 'recorder',
        name: 'Recorder',
        description: 'Records the headers it receives.',
        service_key: 'recorder',
        upstream: { type: 'mcp', url: fixture.url, transport: 'streamable-http' },
        auth: { scheme: 'bearer' },
      });
    });
    after(async () => {
      server?.assertResponsesValid();
      await server?.close();
      await model?.close();
      await everything?.close();
      await fixture?.close();
    });
    beforeEach(() => {
      model.requests.length = 0;
    });

    it('agent_create, agent_read, agent_update (partial), agent_list (pages), organisation scope', async () => {
      const created = await ok('agent_create', {
        name: 'Triage',
        instructions: 'Label messages.',
        servers: [{ server: 'svc-sidekick', tools: ['capabilities_discover'] }],
        introMessage: 'Hi',
      });
      expect(created).to.deep.include({
        name: 'Triage',
        description: '',
        version: 1,
        releaseVersion: null,
        isPublicTemplate: false,
        model: null,
        outputSchema: null,
        introMessage: 'Hi',
      });
      expect(await ok('agent_read', { agentId: created.agentId })).to.deep.equal(created);
      const updated = await ok('agent_update', { agentId: created.agentId, description: 'Sorts mail' });
      expect(updated).to.deep.include({
        name: 'Triage',
        description: 'Sorts mail',
        instructions: 'Label messages.',
        version: 2,
      });
      const cleared = await ok('agent_update', { agentId: created.agentId, introMessage: null });
      expect(cleared.introMessage).to.equal(null);
      await ok('agent_create', { name: 'Second', instructions: 'x' });
      const page = await ok('agent_list', { limit: 1 });
      expect(page.agents).to.have.length(1);
      const rest = await ok('agent_list', { limit: 100, cursor: page.nextCursor });
      expect(rest.agents.length).to.be.greaterThan(0);
      expect(rest.agents.map((a: { agentId: string }) => a.agentId)).to.not.include(page.agents[0].agentId);
      const theirs = await tool('agent_read', { agentId: created.agentId }, other);
      expect(theirs.isError).to.equal(true);
      expect((await ok('agent_list', {}, other)).agents).to.deep.equal([]);
    });

    it('configuration the schemas cannot judge is refused naming the field (-32000)', async () => {
      const unknownServer = await tool('agent_create', {
        name: 'A',
        instructions: 'x',
        servers: [{ server: 'no-such-server' }],
      });
      expect(unknownServer.code).to.equal(-32000);
      expect(unknownServer.message).to.include('servers[0].server');
      const unknownTool = await tool('agent_create', {
        name: 'A',
        instructions: 'x',
        servers: [{ server: 'svc-sidekick', tools: ['nope'] }],
      });
      expect(unknownTool.message).to.include('servers[0].tools');
      const badSchema = await tool('agent_create', { name: 'A', instructions: 'x', outputSchema: { type: 'string' } });
      expect(badSchema.message).to.include('outputSchema');
      const badModel = await tool('agent_create', { name: 'A', instructions: 'x', model: 'gpt-4o' });
      expect(badModel.message).to.include('model');
      const emptyUpdate = await tool('agent_update', { agentId: 'agt_x' });
      expect(emptyUpdate.code).to.equal(-32000);
    });

    it('agent_publish_release and agent_toggle_public_template: a template needs a release; chats run the latest release', async () => {
      const agent = await ok('agent_create', { name: 'Pub', instructions: 'Version one.' });
      const refused = await tool('agent_toggle_public_template', { agentId: agent.agentId, public: true });
      expect(refused.isError).to.equal(true);
      expect(refused.structuredContent.code).to.equal('release_required');
      const rel = await ok('agent_publish_release', { agentId: agent.agentId, notes: 'first' });
      expect(rel).to.deep.include({ agentId: agent.agentId, releaseVersion: 1 });
      expect(await ok('agent_toggle_public_template', { agentId: agent.agentId, public: true })).to.deep.equal({
        agentId: agent.agentId,
        isPublicTemplate: true,
        releaseVersion: 1,
      });
      await ok('agent_update', { agentId: agent.agentId, instructions: 'Version two (draft).' });
      model.setScript([reply.text('hi')]);
      await ok('agent_invoke', { agentId: agent.agentId, message: 'which version?' });
      expect((model.requests[0]!.body as any).messages[0].content).to.equal('Version one.');
      expect((await ok('agent_publish_release', { agentId: agent.agentId })).releaseVersion).to.equal(2);
      model.setScript([reply.text('hi')]);
      await ok('agent_invoke', { agentId: agent.agentId, message: 'and now?' });
      expect((model.requests[1]!.body as any).messages[0].content).to.equal('Version two (draft).');
    });

    it('agent_invoke starts and continues chats; chat_create, chat_list, chat_reset_conversation', async () => {
      const agent = await ok('agent_create', { name: 'Chatty', instructions: 'Chat.', introMessage: 'Welcome!' });
      model.setScript([reply.text('one'), reply.text('two')]);
      const first = await ok('agent_invoke', { agentId: agent.agentId, message: 'hello' });
      expect(first).to.deep.include({ success: true, response: 'one', agentId: agent.agentId });
      const second = await ok('agent_invoke', { agentId: agent.agentId, message: 'again', chatId: first.chatId });
      expect(second).to.deep.equal({ success: true, response: 'two', chatId: first.chatId, agentId: agent.agentId });
      expect(
        (model.requests[1]!.body as any).messages.slice(1).map((m: { content: string }) => m.content),
      ).to.deep.equal(['hello', 'one', 'again']);

      const made = await ok('chat_create', { agentId: agent.agentId, title: 'Planning' });
      expect(made).to.deep.include({ agentId: agent.agentId, title: 'Planning', introMessage: 'Welcome!' });
      const listed = await ok('chat_list', { agentId: agent.agentId });
      expect(listed.chats.map((c: { chatId: string }) => c.chatId)).to.deep.equal([made.chatId, first.chatId]);
      const paged = await ok('chat_list', { agentId: agent.agentId, limit: 1 });
      expect(
        (await ok('chat_list', { agentId: agent.agentId, cursor: paged.nextCursor })).chats.map(
          (c: { chatId: string }) => c.chatId,
        ),
      ).to.deep.equal([first.chatId]);
      expect((await ok('chat_list', {}, other)).chats).to.deep.equal([]);

      expect(await ok('chat_reset_conversation', { chatId: first.chatId })).to.deep.equal({
        success: true,
        chatId: first.chatId,
      });
      model.setScript([reply.text('fresh')]);
      await ok('agent_invoke', { agentId: agent.agentId, message: 'after reset', chatId: first.chatId });
      expect(
        (model.requests[2]!.body as any).messages.slice(1).map((m: { content: string }) => m.content),
      ).to.deep.equal(['after reset']);

      const foreign = await tool('agent_invoke', { agentId: agent.agentId, message: 'x', chatId: first.chatId }, other);
      expect(foreign.isError).to.equal(true);
      expect((await tool('chat_reset_conversation', { chatId: first.chatId }, other)).isError).to.equal(true);
    });

    it('agent_invoke with no model configured for the agent answers a clear error naming the setting', async () => {
      const agent = await ok('agent_create', { name: 'NoKey', instructions: 'x', model: 'openai/gpt-4o-mini' });
      const r = await tool('agent_invoke', { agentId: agent.agentId, message: 'hi' });
      expect(r.isError).to.equal(true);
      expect(r.structuredContent.error).to.include('OPENAI_API_KEY');
      expect(model.requests).to.have.length(0);
    });

    it('a failed turn answers success false with the reason; the chat exists', async () => {
      const agent = await ok('agent_create', { name: 'Failing', instructions: 'x' });
      // 400 is not retried by the SDK (5xx would be, after a back-off): the test stays fast.
      model.setScript([{ error: { status: 400, message: 'model exploded' } }]);
      const r = await ok('agent_invoke', { agentId: agent.agentId, message: 'hi' });
      expect(r.success).to.equal(false);
      expect(r.response).to.include('model exploded');
      expect(r.chatId).to.match(/^chat_/);
    });

    it('the agent calls a proxied upstream tool (server-everything); its image becomes a chat file (chat_list_artifacts)', async () => {
      const agent = await ok('agent_create', {
        name: 'Imager',
        instructions: 'Use tools.',
        servers: [{ server: 'everything', tools: ['get-tiny-image', 'echo'] }],
      });
      model.setScript([reply.toolCall('get-tiny-image', { PCID: pcid }), reply.text('Here is the image.')]);
      const r = await ok('agent_invoke', { agentId: agent.agentId, message: 'show me a tiny image' });
      expect(r).to.deep.include({ success: true, response: 'Here is the image.' });
      const offered = (model.requests[0]!.body as any).tools.map(
        (t: { function: { name: string } }) => t.function.name,
      );
      expect(offered).to.have.members(['get-tiny-image', 'echo']);
      const toolMsg = (model.requests[1]!.body as any).messages.find((m: { role: string }) => m.role === 'tool');
      expect(toolMsg.content).to.include('saved as chat file');
      const files = await ok('chat_list_artifacts', { chatId: r.chatId });
      expect(files.files).to.have.length(1);
      expect(files.files[0]).to.deep.include({ mimeType: 'image/png' });
      const download = await fetch(files.files[0].url);
      expect(download.status).to.equal(200);
      const bytes = Buffer.from(await download.arrayBuffer());
      expect(bytes.subarray(1, 4).toString()).to.equal('PNG');
      expect(bytes.length).to.equal(files.files[0].size);
    });

    it('header forwarding: the upstream gets X-Pf-Forward-* values and the connection credential, never the channel key; values never share a session', async () => {
      const recorderPcid = await createConnection(server, org, {
        name: 'Recorder',
        service_key: 'recorder',
        secret: 'conn-secret',
      });
      const agent = await ok('agent_create', {
        name: 'Forwarder',
        instructions: 'x',
        servers: [{ server: 'recorder', tools: ['whoami'] }],
      });
      const ch = (
        await call(server.baseUrl, 'POST', '/v1/channels', { token: org.token, body: { agentId: agent.agentId } })
      ).body as { triggerId: string; apiKey: string };
      const seen: Array<{ headers: Record<string, string>; meta?: Record<string, unknown> }> = [];
      model.setScript((req) => {
        const toolMsg = req.messages.find((m: { role: string }) => m.role === 'tool');
        if (!toolMsg) return reply.toolCall('whoami', { PCID: recorderPcid });
        seen.push(JSON.parse(toolMsg.content as string));
        return reply.text('done');
      });
      const sessionsBefore = fixture.sessionsOpened;
      for (const tenant of ['acme', 'globex']) {
        const res = await call(server.baseUrl, 'POST', `/ext/triggers/${ch.triggerId}`, {
          headers: {
            'x-api-key': ch.apiKey,
            'X-Pf-Forward-Tenant': tenant,
            'X-Pf-Forward-Authorization': 'Bearer stolen',
            'X-Other': 'no',
          },
          body: { message: 'who am I?', metadata: { caller: tenant } },
        });
        expect(res.status, res.text).to.equal(200);
      }
      expect(seen.map((s) => s.headers.tenant)).to.deep.equal(['acme', 'globex']);
      for (const s of seen) {
        expect(s.headers.authorization).to.equal('Bearer conn-secret');
        expect(JSON.stringify(s.headers)).to.not.include(ch.apiKey);
        expect(s.headers['x-other']).to.equal(undefined);
      }
      expect(seen.map((s) => s.meta?.sourceMetadata)).to.deep.equal([{ caller: 'acme' }, { caller: 'globex' }]);
      expect(fixture.sessionsOpened - sessionsBefore).to.equal(2);
    });

    it('the workflow agent step sends the templated message; the reply is the step result and the turn a step file', async () => {
      const agent = await ok('agent_create', { name: 'Summariser', instructions: 'Summarise.' });
      const wf = await deploy(server, org, {
        name: 'Agent step flow',
        steps: [{ type: 'agent', name: 'Summarise', agentId: agent.agentId, message: 'Summarise: {{ inputs.text }}' }],
      });
      model.setScript([reply.text('A short summary.')]);
      const res = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
        headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
        body: { text: 'a long text' },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status).to.equal('COMPLETE');
      expect(JSON.stringify(res.body), JSON.stringify(res.body)).to.include('A short summary.');
      expect((model.requests[0]!.body as any).messages.at(-1).content).to.equal('Summarise: a long text');
      const results = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/runs/${wf.automationId}/${res.headers.get('x-pf-run-id')}/results`,
      );
      expect(results.status, results.text).to.equal(200);
      const urls = results.body.results[0].resultUrls as Record<string, { url: string }>;
      expect(Object.keys(urls)).to.have.members(['result.md', 'agent-turn.json']);
      expect(await (await fetch(urls['result.md']!.url)).text()).to.equal('A short summary.');
      const turn = (await (await fetch(urls['agent-turn.json']!.url)).json()) as {
        chatId: string;
        ok: boolean;
        messages: Array<{ role: string }>;
      };
      expect(turn).to.deep.include({ ok: true });
      expect(turn.chatId).to.match(/^chat_/);
      expect(turn.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
    });

    // The Inspector's interop does not depend on the store: once, on sqlite.
    if (kind === 'sqlite')
      it('the MCP Inspector CLI runs agent_create, then agent_invoke', async () => {
        const url = `${server.baseUrl}/mcp/agent-management`;
        const created = await inspector(url, org.token, [
          '--method',
          'tools/call',
          '--tool-name',
          'agent-management_agent_create',
          '--tool-arg',
          'name=Inspector agent',
          '--tool-arg',
          'instructions=Answer in one word.',
        ]);
        expect(created.code, created.stderr).to.equal(0);
        const agentId = (JSON.parse(created.stdout) as { structuredContent: { agentId: string } }).structuredContent
          .agentId;
        model.setScript([reply.text('Hello.')]);
        const invoked = await inspector(url, org.token, [
          '--method',
          'tools/call',
          '--tool-name',
          'agent-management_agent_invoke',
          '--tool-arg',
          `agentId=${agentId}`,
          '--tool-arg',
          'message=Greet me',
        ]);
        expect(invoked.code, invoked.stderr).to.equal(0);
        expect((JSON.parse(invoked.stdout) as { structuredContent: unknown }).structuredContent).to.deep.include({
          success: true,
          response: 'Hello.',
          agentId,
        });
      });
  });
}
