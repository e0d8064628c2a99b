/**
 * The scripted model server (test/helpers/model-server.ts) against the real AI SDK: the
 * openai-compatible provider streams and generates through it, executes scripted tool calls and
 * sends their results back, sees scripted errors, and stops a tool-calling loop at the step
 * limit. Also the raw wire format a provider relies on.
 */
import { expect } from 'chai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import {
  alwaysToolCall,
  echoLastToolResult,
  reply,
  startModelServer,
  type ModelServer,
} from '../../helpers/model-server.js';

describe('agents: scripted model server', () => {
  let server: ModelServer;
  beforeEach(async () => {
    server = await startModelServer();
  });
  afterEach(async () => server.close());

  const model = (includeUsage = false) =>
    createOpenAICompatible({ name: 'scripted', baseURL: server.baseUrl, apiKey: 'k', includeUsage })('scripted');
  const calls: unknown[] = [];
  const weather = tool({
    description: 'Weather for a city',
    inputSchema: jsonSchema<{ city: string }>({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    }),
    execute: async ({ city }) => {
      calls.push(city);
      return { city, forecast: 'sunny' };
    },
  });
  beforeEach(() => {
    calls.length = 0;
  });

  it('streams plain text to completion', async () => {
    server.setScript([reply.text('Hello there, streaming world!')]);
    const result = streamText({ model: model(true), prompt: 'Say hi' });
    const deltas: string[] = [];
    for await (const d of result.textStream) deltas.push(d);
    expect(deltas.length).to.be.greaterThan(1);
    expect(deltas.join('')).to.equal('Hello there, streaming world!');
    expect(await result.finishReason).to.equal('stop');
    expect((await result.usage).totalTokens).to.equal(15);
    const body = server.requests[0]!.body;
    expect(body.stream).to.equal(true);
    expect(body.stream_options).to.deep.equal({ include_usage: true });
    expect(body.messages).to.deep.equal([{ role: 'user', content: 'Say hi' }]);
    expect(server.requests[0]!.headers.authorization).to.equal('Bearer k');
  });

  it('generates plain text without streaming', async () => {
    server.setScript([reply.text('plain')]);
    const result = await generateText({ model: model(), prompt: 'x' });
    expect(result.text).to.equal('plain');
    expect(result.finishReason).to.equal('stop');
    expect(server.requests[0]!.body.stream).to.equal(undefined);
  });

  for (const mode of ['streamText', 'generateText'] as const) {
    it(`${mode}: a scripted tool call is executed and its result goes back in the next request`, async () => {
      server.setScript([reply.toolCall('weather', { city: 'Oslo' }, 'call_w1'), reply.text('It is sunny in Oslo.')]);
      const args = {
        model: model(),
        system: 'Be brief.',
        prompt: 'Weather in Oslo?',
        tools: { weather },
        stopWhen: stepCountIs(5),
      };
      const text = mode === 'streamText' ? await streamText(args).text : (await generateText(args)).text;
      expect(text).to.equal('It is sunny in Oslo.');
      expect(calls).to.deep.equal(['Oslo']);
      expect(server.requests).to.have.length(2);

      const [first, second] = server.requests.map((r) => r.body);
      expect(first!.tools).to.deep.equal([
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Weather for a city',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
      ]);
      expect(first!.tool_choice).to.equal('auto');
      expect(first!.messages).to.deep.equal([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ]);
      expect(second!.messages.slice(2)).to.deep.equal([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_w1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_w1', content: '{"city":"Oslo","forecast":"sunny"}' },
      ]);
    });
  }

  it('a function script sees the messages and tools; echoLastToolResult answers with the tool result', async () => {
    server.setScript(echoLastToolResult('weather', { city: 'Rome' }));
    const result = await generateText({
      model: model(),
      prompt: 'Rome?',
      tools: { weather },
      stopWhen: stepCountIs(5),
    });
    expect(result.text).to.equal('{"city":"Rome","forecast":"sunny"}');
    expect(result.steps).to.have.length(2);
  });

  it('an error reply surfaces as an error (generateText throws, streamText emits it)', async () => {
    server.setScript([reply.error(400, 'context too long')]);
    const thrown = await generateText({ model: model(), prompt: 'x', maxRetries: 0 }).catch((e: Error) => e);
    expect(thrown).to.be.instanceOf(Error);
    expect((thrown as Error).message).to.contain('context too long');
    expect((thrown as unknown as { statusCode: number }).statusCode).to.equal(400);

    server.setScript([reply.error(429, 'slow down')]);
    const errors: unknown[] = [];
    const result = streamText({
      model: model(),
      prompt: 'x',
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    const parts: string[] = [];
    for await (const p of result.fullStream) parts.push(p.type);
    expect(parts).to.include('error');
    expect(String((errors[0] as Error).message)).to.contain('slow down');
  });

  it('checks response_format as OpenAI does: a json_schema request is answered, a malformed one is 400', async () => {
    const url = `${server.baseUrl}/chat/completions`;
    const post = (response_format: unknown) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'scripted', messages: [{ role: 'user', content: 'x' }], response_format }),
      });
    server.setScript([reply.json({ ok: true })]);
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
    const ok = await post({ type: 'json_schema', json_schema: { name: 'output', schema, strict: false } });
    expect(ok.status).to.equal(200);
    const body = (await ok.json()) as { choices: Array<{ message: { content: string } }> };
    expect(JSON.parse(body.choices[0]!.message.content)).to.deep.equal({ ok: true });
    expect(server.requests[0]!.body.response_format.json_schema.schema).to.deep.equal(schema);
    for (const bad of [
      { type: 'json_schema' },
      { type: 'json_schema', json_schema: { name: 'has spaces', schema } },
      { type: 'json_schema', json_schema: { name: 'output' } },
      { type: 'xml' },
    ]) {
      const res = await post(bad);
      expect(res.status, JSON.stringify(bad)).to.equal(400);
      expect(((await res.json()) as { error: { type: string } }).error.type).to.equal('invalid_request_error');
    }
  });

  it('an empty script answers a loud 500 instead of hanging', async () => {
    const thrown = await generateText({ model: model(), prompt: 'x', maxRetries: 0 }).catch((e: Error) => e);
    expect((thrown as Error).message).to.contain('script ran out');
  });

  it('alwaysToolCall with stepCountIs(3) stops after three steps, finishing on tool-calls', async () => {
    server.setScript(alwaysToolCall('weather', { city: 'Paris' }));
    const result = streamText({ model: model(), prompt: 'loop', tools: { weather }, stopWhen: stepCountIs(3) });
    await result.consumeStream();
    expect(await result.finishReason).to.equal('tool-calls');
    expect(await result.steps).to.have.length(3);
    expect(calls).to.deep.equal(['Paris', 'Paris', 'Paris']);
    expect(server.requests).to.have.length(3);
  });

  it('speaks the raw wire format: chunks, tool call deltas, usage, [DONE], /v1/models, 404', async () => {
    server.setScript([{ text: 'ab', toolCalls: [{ name: 'weather', arguments: { city: 'X' }, id: 'c1' }] }]);
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm1',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'q' }],
      }),
    });
    expect(res.headers.get('content-type')).to.equal('text/event-stream');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.replace(/^data: /, ''));
    expect(events.at(-1)).to.equal('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'm1')).to.equal(true);
    const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(toolDeltas[0]).to.deep.include({ index: 0, id: 'c1' });
    expect(toolDeltas.map((d) => d.function.arguments).join('')).to.equal('{"city":"X"}');
    expect(chunks.at(-2).choices[0].finish_reason).to.equal('tool_calls');
    expect(chunks.at(-1)).to.deep.include({
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });

    const list = (await (await fetch(`${server.baseUrl}/models`)).json()) as any;
    expect(list.data.map((m: { id: string }) => m.id)).to.deep.equal(['scripted']);
    const missing = await fetch(`${server.baseUrl}/nope`);
    expect(missing.status).to.equal(404);
    expect(((await missing.json()) as any).error.message).to.contain('no route');
  });
});
