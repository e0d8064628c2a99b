/**
 * Agent API channel benchmarks (not tests), against baselines measured in the same run:
 * 1. Channel round trips (a new chat per call, the scripted model answering at once) vs a
 *    bare node:http server, 50 connections (target ratio ≥ 0.08). Two floors are measured in the
 *    same run: node:http calling the same model through the AI SDK's `generateText` and nothing
 *    else (bench/servers/model-floor.ts), and through one raw node:http request. They bound what
 *    any channel on this stack and machine can reach.
 * 2. Added latency of the channel over the model's own time: sequential channel calls vs the
 *    same streamed completion asked of the model server directly (target p50 ≤ 5 ms).
 * 3. The tool loop's cost per tool call over a direct gateway call: turns with 3 tool calls
 *    vs turns with none, minus the extra model round trips and the direct gateway calls
 *    (target ≤ 2 ms per tool call).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServer, load, report, baselineLoad } from './lib.js';

interface DemoInfo {
  url: string;
  bootstrap: {
    clientId: string;
    clientSecret: string;
    orgId: string;
    demo: { channelTriggerId: string; channelApiKey: string };
  };
}

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/** Sequential POSTs over one keep-alive connection, timed in microseconds. */
async function sequential(url: string, headers: Record<string, string>, body: string, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const req = http.request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200
              ? resolve(performance.now() - t0)
              : reject(new Error(`${url}: HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const out: number[] = [];
  for (let i = 0; i < n + 30; i++) {
    const ms = await once();
    if (i >= 30) out.push(ms);
  }
  agent.destroy();
  return out;
}

async function token(info: DemoInfo): Promise<string> {
  const b = info.bootstrap;
  const res = await fetch(`${info.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: b.clientId,
      client_secret: b.clientSecret,
      scope: `org:${b.orgId}`,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const capture = path.join(mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-')), 'model-request.json');
  const model = await startServer<{ url: string }>('bench/servers/scripted-model.ts', { BENCH_CAPTURE: capture });
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    OPENAI_COMPATIBLE_BASE_URL: model.info.url,
    DEFAULT_MODEL: 'openai-compatible/bench',
  });
  try {
    const { channelTriggerId, channelApiKey } = target.info.bootstrap.demo;
    const channelUrl = `${target.info.url}/ext/triggers/${channelTriggerId}`;
    const channelHeaders = { 'content-type': 'application/json', 'x-api-key': channelApiKey };
    const message = (m: string) => JSON.stringify({ message: m });
    for (const m of ['tools:1', 'hi']) {
      const check = await fetch(channelUrl, { method: 'POST', headers: channelHeaders, body: message(m) });
      if (check.status !== 200) throw new Error(`channel answered ${check.status}: ${await check.text()}`);
    }

    const channel = await load('channel round trip (new chat, model answers at once)', {
      url: channelUrl,
      method: 'POST',
      headers: channelHeaders,
      body: message('hi'),
    });
    const floors = [];
    for (const [mode, name] of [
      ['ai-sdk', 'floor: node:http + AI SDK generateText, nothing else'],
      ['http', 'floor: node:http + one raw node:http model call'],
    ] as const) {
      const floor = await startServer<{ url: string }>('bench/servers/model-floor.ts', {
        MODEL_URL: model.info.url,
        FLOOR_MODE: mode,
      });
      try {
        floors.push(
          await load(name, {
            url: floor.info.url,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: message('hi'),
          }),
        );
      } finally {
        await floor.stop();
      }
    }
    report('Agent channel vs bare node:http (50 connections)', base, [channel, ...floors]);
    console.log(`- channel / AI SDK floor: ${(channel.reqPerSec / floors[0]!.reqPerSec).toFixed(2)}`);

    const n = Number(process.env.BENCH_SEQ_CALLS ?? 300);
    // Model time: exactly the request a turn sends (system prompt, the agent's tools, the message), asked of the model directly.
    const modelBody = readFileSync(capture, 'utf8');
    const modelDirect = await sequential(
      `${model.info.url}/chat/completions`,
      { 'content-type': 'application/json' },
      modelBody,
      n,
    );
    const turn0 = await sequential(channelUrl, channelHeaders, message('hi'), n);
    const turn3 = await sequential(channelUrl, channelHeaders, message('tools:3'), Math.max(50, Math.floor(n / 3)));
    const bearer = `Bearer ${await token(target.info)}`;
    const gatewayBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'gateway_invoke', arguments: { server: 'mcp', tool: 'listServers', arguments: {} } },
    });
    const gatewayDirect = await sequential(
      `${target.info.url}/mcp/gateway`,
      { 'content-type': 'application/json', accept: 'application/json', authorization: bearer },
      gatewayBody,
      n,
    );

    console.log(`\n## Added latency (sequential calls on one keep-alive connection; ${n} each)`);
    console.log('| measure | model alone ms | channel turn ms | added ms |');
    console.log('|---|---:|---:|---:|');
    for (const p of [50, 90, 99])
      console.log(
        `| p${p} | ${pct(modelDirect, p).toFixed(3)} | ${pct(turn0, p).toFixed(3)} | ${(pct(turn0, p) - pct(modelDirect, p)).toFixed(3)} |`,
      );
    const perTool = (pct(turn3, 50) - pct(turn0, 50) - 3 * pct(modelDirect, 50) - 3 * pct(gatewayDirect, 50)) / 3;
    console.log(
      `\n## Tool loop (p50): turn with 3 tool calls ${pct(turn3, 50).toFixed(3)} ms, without ${pct(turn0, 50).toFixed(3)} ms, one model call ${pct(modelDirect, 50).toFixed(3)} ms, one direct gateway call ${pct(gatewayDirect, 50).toFixed(3)} ms`,
    );
    console.log(
      `- added by the tool loop per tool call over a direct gateway call: ${perTool.toFixed(3)} ms (target ≤ 2)`,
    );
  } finally {
    await target.stop();
    await model.stop();
  }
}
