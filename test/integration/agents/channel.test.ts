/**
 * The agent API channel end to end (spec 5, "Agent API channel", Errors): a real server on
 * loopback, the scripted OpenAI-compatible model server (the one permitted stand-in), real tool
 * calls through the gateway, every response checked against the OpenAPI bundle — on every
 * store this machine has.
 */
import { expect } from 'chai';
import { createApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { startModelServer, reply, alwaysToolCall, type ModelServer } from '../../helpers/model-server.js';
import { callTool } from '../gateway/helpers.js';

const kinds = await storeKinds();

interface Agent {
  agentId: string;
}
interface Channel {
  triggerId: string;
  apiKey: string;
}

/** Text of every message of a recorded model request, in order (role: text). */
function transcript(body: { messages: Array<{ role: string; content: unknown; tool_calls?: unknown[] }> }): string[] {
  return body.messages.map((m) => {
    const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    return `${m.role}: ${m.tool_calls ? `[tool calls ${JSON.stringify(m.tool_calls.map((c) => (c as { function: { name: string } }).function.name))}]` : content}`;
  });
}

for (const kind of kinds) {
  describe(`agent API channel (${kind})`, function () {
    this.timeout(60_000);
    let model: ModelServer;
    let server: TestServer;
    let org: TestOrg;

    const agentTool = (name: string, args: Record<string, unknown>) =>
      callTool(server, org.token, 'agent-management', `agent-management_${name}`, args);
    const newAgent = async (extra: Record<string, unknown> = {}): Promise<Agent> => {
      const r = await agentTool('agent_create', {
        name: 'Helper',
        instructions: 'Answer briefly.',
        servers: [{ server: 'svc-sidekick' }],
        ...extra,
      });
      expect(r.isError, JSON.stringify(r)).to.not.equal(true);
      return r.structuredContent as Agent;
    };
    const newChannel = async (agentId: string, extra: Record<string, unknown> = {}): Promise<Channel> => {
      const r = await call(server.baseUrl, 'POST', '/v1/channels', { token: org.token, body: { agentId, ...extra } });
      expect(r.status, r.text).to.equal(201);
      return r.body as Channel;
    };
    const send = (ch: Channel, body: unknown, headers: Record<string, string> = {}, path = 'triggers') =>
      call(server.baseUrl, 'POST', `/ext/${path}/${ch.triggerId}`, {
        headers: { 'x-api-key': ch.apiKey, ...headers },
        body,
      });

    before(async () => {
      model = await startModelServer();
      server = await startTestServer(kind, {
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
        SYNC_WAIT_MS: '1500',
        AGENT_MAX_STEPS: '3',
      });
      org = await createTestOrg(server, 'Channel org');
    });
    after(async () => {
      await server?.close();
      await model?.close();
    });
    afterEach(() => server.assertResponsesValid());
    beforeEach(() => {
      model.requests.length = 0;
    });

    it('op:sendChannelMessage — the agent discovers with a real tool call, answers, and the chat continues with its history', async () => {
      const agent = await newAgent();
      const ch = await newChannel(agent.agentId);
      model.setScript([
        reply.toolCall('capabilities_discover', { request: 'send a message to an agent' }),
        reply.text('Use agent_invoke.'),
      ]);
      const first = await send(ch, { message: 'How do I talk to an agent?' });
      expect(first.status, first.text).to.equal(200);
      expect(first.headers.get('content-type')).to.match(/^text\/plain/);
      expect(first.text).to.equal('Use agent_invoke.');
      const chatId = first.headers.get('x-pf-chat-id')!;
      expect(chatId).to.match(/^chat_[0-9a-f]{32}$/);
      expect(first.headers.get('x-pf-run-id')).to.match(/^turn_[0-9a-f]{32}$/);
      expect(first.headers.get('x-pf-automation-id')).to.equal(null);
      // The model saw the agent's tools, and the real discovery result came back to it.
      const [r1, r2] = model.requests.map((r) => r.body as any);
      expect(r1.tools.map((t: { function: { name: string } }) => t.function.name)).to.include.members([
        'capabilities_discover',
        'capability_details',
      ]);
      expect(r1.messages[0]).to.deep.include({ role: 'system' });
      expect(r1.messages[0].content).to.include('Answer briefly.');
      const toolMessage = r2.messages.find((m: { role: string }) => m.role === 'tool');
      expect(JSON.parse(toolMessage.content).tools.map((t: { name: string }) => t.name)).to.include(
        'agent-management_agent_invoke',
      );

      model.setScript([reply.text('You are welcome.')]);
      const second = await send(ch, { message: 'Thanks!', chatId });
      expect(second.status, second.text).to.equal(200);
      expect(second.headers.get('x-pf-chat-id')).to.equal(chatId);
      expect(transcript(model.requests[2]!.body as any).slice(1)).to.deep.equal([
        'user: How do I talk to an agent?',
        'assistant: [tool calls ["capabilities_discover"]]',
        `tool: ${toolMessage.content}`,
        'assistant: Use agent_invoke.',
        'user: Thanks!',
      ]);
    });

    it('op:callApiTrigger serves a channel trigger id too, and /ext/channels answers the same', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([reply.text('one'), reply.text('two')]);
      const a = await send(ch, { message: 'hi' }, {}, 'triggers');
      const b = await send(ch, { message: 'hi' }, {}, 'channels');
      expect([a.status, a.text, b.status, b.text]).to.deep.equal([200, 'one', 200, 'two']);
    });

    it('output formats: markdown, json without a schema, json with the structured output', async () => {
      const plain = await newAgent();
      const md = await newChannel(plain.agentId, { outputFormat: 'markdown' });
      model.setScript([reply.text('**bold**')]);
      const m = await send(md, { message: 'x' });
      expect([m.status, m.text]).to.deep.equal([200, '**bold**']);
      expect(m.headers.get('content-type')).to.match(/^text\/markdown/);

      const js = await newChannel(plain.agentId, { outputFormat: 'json' });
      model.setScript([reply.text('plain answer')]);
      const j = await send(js, { message: 'x' });
      expect(j.status).to.equal(200);
      expect(j.body).to.deep.equal({ chatId: j.headers.get('x-pf-chat-id'), output: 'plain answer' });

      const schema = {
        type: 'object',
        required: ['invoice'],
        properties: { invoice: { type: 'string', pattern: '^INV-' } },
        additionalProperties: false,
      };
      const extractor = await newAgent({ outputSchema: schema });
      const sj = await newChannel(extractor.agentId, { outputFormat: 'json' });
      // Invalid first (retried once with the errors), then valid.
      model.setScript([reply.text('{"invoice": "42"}'), reply.text('```json\n{"invoice": "INV-42"}\n```')]);
      const s = await send(sj, { message: 'Invoice INV-42 is late' });
      expect([s.status, s.body]).to.deep.equal([200, { invoice: 'INV-42' }]);
      const retry = model.requests.at(-1)!.body as any;
      expect(retry.messages.at(-1).content).to.match(
        /not valid against the output schema.*\/invoice must match pattern/,
      );
      // The openai-compatible provider asks for the schema natively on both calls.
      expect(model.requests.slice(-2).map((r) => r.body.response_format)).to.deep.equal([
        { type: 'json_schema', json_schema: { name: 'output', schema, strict: false } },
        { type: 'json_schema', json_schema: { name: 'output', schema, strict: false } },
      ]);
      // Invalid twice: a clear 502 invalid_output, with the chat headers.
      model.setScript([reply.text('nope'), reply.text('still nope')]);
      const bad = await send(sj, { message: 'again' });
      expect(bad.status).to.equal(502);
      expect(bad.body.error).to.equal('invalid_output');
      expect(bad.headers.get('x-pf-chat-id')).to.match(/^chat_/);
    });

    it('errors: 401 missing, wrong or unknown key; 403 disabled; 415; 400 body', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      const none = await call(server.baseUrl, 'POST', `/ext/triggers/${ch.triggerId}`, { body: { message: 'x' } });
      expect([none.status, none.body.error]).to.deep.equal([401, 'missing_api_key']);
      expect((await send({ ...ch, apiKey: 'syc_wrong' }, { message: 'x' })).status).to.equal(401);
      const unknown = await send(
        { triggerId: 'chn_00000000000000000000000000000000', apiKey: ch.apiKey },
        { message: 'x' },
      );
      expect([unknown.status, unknown.body.error]).to.deep.equal([401, 'invalid_api_key']);
      // 401 comes before the body is read: even a malformed body answers 401 without a key.
      const early = await call(server.baseUrl, 'POST', `/ext/channels/${ch.triggerId}`, {
        headers: { 'content-type': 'application/json' },
        raw: '{not json',
      });
      expect(early.status).to.equal(401);

      for (const path of ['triggers', 'channels']) {
        const text = await call(server.baseUrl, 'POST', `/ext/${path}/${ch.triggerId}`, {
          headers: { 'x-api-key': ch.apiKey, 'content-type': 'text/plain' },
          raw: 'hello',
        });
        expect([text.status, text.body.error], path).to.deep.equal([415, 'unsupported_media_type']);
        const fd = new FormData();
        fd.set('message', 'hello');
        const multi = await fetch(`${server.baseUrl}/ext/${path}/${ch.triggerId}`, {
          method: 'POST',
          headers: { 'x-api-key': ch.apiKey },
          body: fd,
        });
        expect(multi.status, path).to.equal(415);
        const malformed = await call(server.baseUrl, 'POST', `/ext/${path}/${ch.triggerId}`, {
          headers: { 'x-api-key': ch.apiKey, 'content-type': 'application/json' },
          raw: '{"message": ',
        });
        expect(malformed.status, path).to.equal(400);
        const unknownField = await send(ch, { message: 'x', extra: 1 }, {}, path);
        expect([unknownField.status, unknownField.body.error], path).to.deep.equal([400, 'invalid_request']);
        const empty = await send(ch, { message: '' }, {}, path);
        expect(empty.status, path).to.equal(400);
        const noMessage = await send(ch, { chatId: 'chat_x' }, {}, path);
        expect(noMessage.status, path).to.equal(400);
      }
      expect(model.requests).to.have.length(0);

      const etag = (
        await call(server.baseUrl, 'GET', `/v1/channels/${ch.triggerId}`, { token: org.token })
      ).headers.get('etag')!;
      const off = await call(server.baseUrl, 'PATCH', `/v1/channels/${ch.triggerId}`, {
        token: org.token,
        headers: { 'if-match': etag },
        body: { enabled: false },
      });
      expect(off.status, off.text).to.equal(200);
      const disabled = await send(ch, { message: 'x' });
      expect([disabled.status, disabled.body.error]).to.deep.equal([403, 'trigger_disabled']);
    });

    it('405 with Allow: POST for every other method on a channel URL, whatever the key', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      const unknownId = 'chn_00000000000000000000000000000000';
      const keys: Array<[string, Record<string, string>]> = [
        ['valid key', { 'x-api-key': ch.apiKey }],
        ['no key', {}],
        ['wrong key', { 'x-api-key': 'syc_wrong' }],
      ];
      for (const path of ['triggers', 'channels']) {
        for (const id of [ch.triggerId, unknownId]) {
          for (const [what, headers] of keys) {
            for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
              const where = `${method} /ext/${path}/${id === unknownId ? 'unknown' : 'channel'} with ${what}`;
              const res = await call(server.baseUrl, method, `/ext/${path}/${id}?message=hi`, { headers });
              expect([res.status, res.headers.get('allow')], where).to.deep.equal([405, 'POST']);
              expect(res.headers.get('content-type'), where).to.match(/^application\/json/);
              expect(res.body, where).to.have.keys('error', 'message');
              expect(res.body.error, where).to.equal('method_not_allowed');
              // The answer is the one the channel operation documents (openapi/triggers.yaml).
              const failure = server.app.responseValidator!.check('sendChannelMessage', {
                status: res.status,
                body: res.body,
                headers: { Allow: res.headers.get('allow')! },
              });
              expect(failure?.message, where).to.equal(undefined);
            }
            const head = await fetch(`${server.baseUrl}/ext/${path}/${id}`, { method: 'HEAD', headers });
            expect([head.status, head.headers.get('allow')], `HEAD /ext/${path} with ${what}`).to.deep.equal([
              405,
              'POST',
            ]);
          }
        }
      }
      // A workflow trigger id keeps its GET form.
      const workflow = await call(server.baseUrl, 'PUT', '/ext/triggers/trg_00000000000000000000000000000000');
      expect([workflow.status, workflow.headers.get('allow')]).to.deep.equal([405, 'GET, POST']);
      expect(model.requests).to.have.length(0);
      // The channel still answers POST.
      model.setScript([reply.text('still here')]);
      const ok = await send(ch, { message: 'hi' });
      expect([ok.status, ok.text]).to.deep.equal([200, 'still here']);
    });

    it("403 unowned_chat_id for another channel's chat and for a chat that does not exist, never echoing the id", async () => {
      const agent = await newAgent();
      const a = await newChannel(agent.agentId);
      const b = await newChannel(agent.agentId);
      model.setScript([reply.text('hello from a')]);
      const chatId = (await send(a, { message: 'hi' })).headers.get('x-pf-chat-id')!;
      for (const id of [chatId, 'chat_0000000000000000000000000000dead', 'not-a-chat-id']) {
        const res = await send(b, { message: 'hi', chatId: id });
        expect([res.status, res.body.error]).to.deep.equal([403, 'unowned_chat_id']);
        expect(res.text).to.not.include(id);
        expect(res.headers.get('x-pf-chat-id')).to.equal(null);
      }
      expect(model.requests).to.have.length(1);
    });

    it('503 model_not_configured names the setting, records no chat, never invents an answer', async () => {
      const agent = await newAgent({ model: 'anthropic/claude-sonnet-4-5' });
      const ch = await newChannel(agent.agentId);
      const before = await server.app.services.db('chats').count({ n: '*' }).first();
      const res = await send(ch, { message: 'hi' });
      expect([res.status, res.body.error]).to.deep.equal([503, 'model_not_configured']);
      expect(res.body.message).to.include('ANTHROPIC_API_KEY');
      expect(res.headers.get('x-pf-chat-id')).to.equal(null);
      expect(await server.app.services.db('chats').count({ n: '*' }).first()).to.deep.equal(before);
    });

    it('a model that never stops calling tools hits the step limit with a clear 502 step_limit', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript(alwaysToolCall('capability_details', { items: ['agent-management_agent_list'] }));
      const res = await send(ch, { message: 'loop' });
      expect([res.status, res.body.error]).to.deep.equal([502, 'step_limit']);
      expect(res.body.message).to.include('AGENT_MAX_STEPS');
      expect(model.requests).to.have.length(3);
    });

    it('a model provider failure is a 502 model_error; metadata reaches the model as sourceMetadata', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([{ error: { status: 400, message: 'context length exceeded' } }]);
      const res = await send(ch, { message: 'x' });
      expect([res.status, res.body.error]).to.deep.equal([502, 'model_error']);
      expect(res.body.message).to.include('context length exceeded');
      model.setScript([reply.text('ok')]);
      await send(ch, { message: 'x', metadata: { customerId: 'c_42', plan: 'pro' } });
      const system = (model.requests.at(-1)!.body as any).messages[0].content as string;
      expect(system).to.include('sourceMetadata').and.include('"customerId":"c_42"');
    });

    it('two concurrent messages on one chat run one at a time, in arrival order', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([reply.text('first')]);
      const chatId = (await send(ch, { message: 'start' })).headers.get('x-pf-chat-id')!;
      model.setScript([{ ...reply.text('slow answer'), delayMs: 400 }, reply.text('fast answer')]);
      const slow = send(ch, { message: 'one', chatId });
      await new Promise((r) => setTimeout(r, 50));
      const fast = send(ch, { message: 'two', chatId });
      const [a, b] = await Promise.all([slow, fast]);
      expect([a.text, b.text]).to.deep.equal(['slow answer', 'fast answer']);
      // The second turn saw the whole first turn: never interleaved.
      expect(transcript(model.requests.at(-1)!.body as any).slice(1)).to.deep.equal([
        'user: start',
        'assistant: first',
        'user: one',
        'assistant: slow answer',
        'user: two',
      ]);
    });

    it('Idempotency-Key replays the turn (Idempotent-Replay: true) without a second model call', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([reply.text('only once')]);
      const first = await send(ch, { message: 'x' }, { 'idempotency-key': 'k-1' });
      const again = await send(ch, { message: 'different body, same key' }, { 'idempotency-key': 'k-1' });
      expect([first.status, first.text, again.status, again.text]).to.deep.equal([200, 'only once', 200, 'only once']);
      expect(again.headers.get('idempotent-replay')).to.equal('true');
      expect(again.headers.get('x-pf-run-id')).to.equal(first.headers.get('x-pf-run-id'));
      expect(again.headers.get('x-pf-chat-id')).to.equal(first.headers.get('x-pf-chat-id'));
      expect(model.requests).to.have.length(1);
      // Past the 24-hour window the same key starts a new turn.
      const dayAgo = new Date(Date.now() - 25 * 3600_000).toISOString();
      await server.app.services
        .db('agent_turns')
        .where({ id: first.headers.get('x-pf-run-id') })
        .update({ created_at: dayAgo });
      model.setScript([reply.text('a new turn')]);
      const later = await send(ch, { message: 'x' }, { 'idempotency-key': 'k-1' });
      expect([later.status, later.text, later.headers.get('idempotent-replay')]).to.deep.equal([
        200,
        'a new turn',
        null,
      ]);
      expect(later.headers.get('x-pf-run-id')).to.not.equal(first.headers.get('x-pf-run-id'));
    });

    it('past the sync wait the timeout body answers and the turn completes into the history', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([{ ...reply.text('late reply'), delayMs: 1900 }]);
      const res = await send(ch, { message: 'slow please' });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ status: 'timeout' });
      const chatId = res.headers.get('x-pf-chat-id')!;
      await new Promise((r) => setTimeout(r, 700));
      model.setScript([reply.text('ok')]);
      await send(ch, { message: 'and now?', chatId });
      expect(transcript(model.requests.at(-1)!.body as any).slice(1)).to.deep.equal([
        'user: slow please',
        'assistant: late reply',
        'user: and now?',
      ]);
    });

    it('Accept: text/event-stream streams deltas, tool calls and a final event', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([
        reply.toolCall('capabilities_discover', { request: 'list agents' }),
        reply.text('Here you go.'),
      ]);
      const res = await fetch(`${server.baseUrl}/ext/triggers/${ch.triggerId}`, {
        method: 'POST',
        headers: { 'x-api-key': ch.apiKey, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ message: 'list' }),
      });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
      const chatId = res.headers.get('x-pf-chat-id');
      const events = (await res.text())
        .trim()
        .split('\n\n')
        .map((block) => {
          const [e, d] = block.split('\n');
          return { event: e!.slice('event: '.length), data: JSON.parse(d!.slice('data: '.length)) };
        });
      const names = events.map((e) => e.event);
      expect(names[0]).to.equal('tool-call-start');
      expect(names).to.include('tool-call-end').and.include('text-delta');
      expect(names.at(-1)).to.equal('done');
      expect(
        events
          .filter((e) => e.event === 'text-delta')
          .map((e) => e.data.delta)
          .join(''),
      ).to.equal('Here you go.');
      expect(events[0]!.data).to.deep.include({ server: 'svc-sidekick', tool: 'capabilities_discover' });
      expect(events.at(-1)!.data).to.deep.equal({
        chatId,
        runId: res.headers.get('x-pf-run-id'),
        reply: 'Here you go.',
        output: null,
      });
    });

    it('key rotation is atomic: the old key fails at once, calls with the new key work', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript(() => reply.text('ok'));
      const rotated = await call(server.baseUrl, 'POST', `/v1/channels/${ch.triggerId}/rotate-key`, {
        token: org.token,
      });
      expect(rotated.status, rotated.text).to.equal(200);
      const [old, fresh] = await Promise.all([
        send(ch, { message: 'x' }),
        send({ ...ch, apiKey: rotated.body.apiKey }, { message: 'x' }),
      ]);
      expect([old.status, fresh.status]).to.deep.equal([401, 200]);
    });

    it('a tool error is fed back to the model as the tool result, and the model recovers', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([
        reply.toolCall('capability_details', { items: [] }),
        reply.text('Sorry, that tool call was wrong.'),
      ]);
      const res = await send(ch, { message: 'details please' });
      expect([res.status, res.text]).to.deep.equal([200, 'Sorry, that tool call was wrong.']);
      const toolMessage = (model.requests[1]!.body as any).messages.find((m: { role: string }) => m.role === 'tool');
      expect(toolMessage.content).to.match(/items/);
    });

    it('a turn past AGENT_TURN_TIMEOUT_MS fails with 504 turn_timeout (an app with a 1 s turn limit on the same store)', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      const config = loadConfig({
        DATA_DIR: server.store.dataDir,
        LOG_LEVEL: 'silent',
        SEED_DEMO: 'false',
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
        RUN_CONCURRENCY: '0',
        AGENT_TURN_TIMEOUT_MS: '1000',
        SYNC_WAIT_MS: '5000',
      });
      const limited = await createApp(config, createLogger('silent'), { db: server.app.services.db });
      try {
        const srv = limited.http.listen(0, '127.0.0.1');
        await new Promise((r) => srv.once('listening', r));
        model.setScript([{ ...reply.text('too late'), delayMs: 2500 }]);
        const res = await call(
          `http://127.0.0.1:${(srv.address() as { port: number }).port}`,
          'POST',
          `/ext/channels/${ch.triggerId}`,
          { headers: { 'x-api-key': ch.apiKey }, body: { message: 'slow' } },
        );
        expect([res.status, res.body.error]).to.deep.equal([504, 'turn_timeout']);
        expect(res.body.message).to.include('AGENT_TURN_TIMEOUT_MS');
        expect(res.headers.get('x-pf-chat-id')).to.match(/^chat_/);
        srv.closeAllConnections();
        await new Promise((r) => srv.close(r));
      } finally {
        await limited.close();
      }
    });

    it('a restart between turns keeps the history (a new app on the same store)', async () => {
      const ch = await newChannel((await newAgent()).agentId);
      model.setScript([reply.text('remembered')]);
      const chatId = (await send(ch, { message: 'remember me' })).headers.get('x-pf-chat-id')!;
      const config = loadConfig({
        DATA_DIR: server.store.dataDir,
        LOG_LEVEL: 'silent',
        SEED_DEMO: 'false',
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
        RUN_CONCURRENCY: '0',
      });
      const second = await createApp(config, createLogger('silent'), { db: server.app.services.db });
      try {
        const srv = second.http.listen(0, '127.0.0.1');
        await new Promise((r) => srv.once('listening', r));
        const port = (srv.address() as { port: number }).port;
        model.setScript([reply.text('yes')]);
        const res = await call(`http://127.0.0.1:${port}`, 'POST', `/ext/triggers/${ch.triggerId}`, {
          headers: { 'x-api-key': ch.apiKey },
          body: { message: 'do you remember?', chatId },
        });
        expect([res.status, res.text]).to.deep.equal([200, 'yes']);
        expect(transcript(model.requests.at(-1)!.body as any).slice(1)).to.deep.equal([
          'user: remember me',
          'assistant: remembered',
          'user: do you remember?',
        ]);
        srv.closeAllConnections();
        await new Promise((r) => srv.close(r));
      } finally {
        await second.close();
      }
    });
  });
}
