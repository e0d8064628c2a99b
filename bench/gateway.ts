/**
 * Gateway benchmarks (not tests), each against a baseline measured in the same run:
 * 1. tools/call of a trivial embedded tool through the gateway vs a bare node:http server
 *    (target ratio ≥ 0.15).
 * 2. A proxied call to a local upstream MCP server vs calling that upstream directly
 *    (targets: added p50 ≤ 1 ms, throughput ≥ 0.6 of direct).
 */
import http from 'node:http';
import { startServer, load, report, baselineLoad, type LoadResult } from './lib.js';

interface DemoInfo {
  url: string;
  bootstrap: { clientId: string; clientSecret: string; orgId: string };
}

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

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

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<Response> {
  const res = await fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res;
}

/** Opens a session on the upstream directly, as any MCP client would. */
async function upstreamSession(url: string): Promise<string> {
  const init = await post(
    url,
    {},
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    },
  );
  const sid = init.headers.get('mcp-session-id');
  if (!sid) throw new Error('upstream gave no session id');
  await fetch(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  return sid;
}

const echoCall = (args: Record<string, unknown>) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'hi', ...args } },
  });

function latencyLine(name: string, direct: LoadResult, proxied: LoadResult): void {
  console.log(
    `- ${name}: p50 ${direct.p50} → ${proxied.p50} ms (added ${(proxied.p50 - direct.p50).toFixed(2)} ms), p99 ${direct.p99} → ${proxied.p99} ms`,
  );
}

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/** Sequential calls over one keep-alive connection, timed in microseconds (autocannon rounds to 1 ms). */
async function sequential(
  opts: { url: string; headers: Record<string, string>; body: string },
  n: number,
): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const req = http.request(
        opts.url,
        { method: 'POST', agent, headers: { ...opts.headers, 'content-length': Buffer.byteLength(opts.body) } },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(opts.body);
    });
  const out: number[] = [];
  for (let i = 0; i < n + 50; i++) {
    const ms = await once();
    if (i >= 50) out.push(ms); // warm-up
  }
  agent.destroy();
  return out;
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const upstream = await startServer<{ url: string }>('bench/servers/mcp-upstream.ts');
  // The upstream MCP server listens on loopback, which the outbound policy refuses unless allowed.
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', { OUTBOUND_ALLOWLIST: '127.0.0.0/8' });
  try {
    const bearer = { authorization: `Bearer ${await token(target.info)}` };
    const embedded = await load('gateway tools/call mcp/listServers', {
      url: `${target.info.url}/mcp/mcp`,
      method: 'POST',
      headers: { ...MCP_HEADERS, ...bearer },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'listServers', arguments: {} },
      }),
    });
    const ping = await load('gateway ping (router floor)', {
      url: `${target.info.url}/mcp/gateway`,
      method: 'POST',
      headers: { ...MCP_HEADERS, ...bearer },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    report('Gateway: trivial embedded tool vs bare node:http (50 connections)', base, [embedded, ping]);

    await post(`${target.info.url}/v1/servers`, bearer, {
      path: 'bench-upstream',
      name: 'Bench upstream',
      service_key: 'bench-upstream',
      upstream: { type: 'mcp', url: upstream.info.url, transport: 'streamable-http' },
      auth: { scheme: 'bearer' },
    });
    const conn = (await (
      await post(`${target.info.url}/v1/connections`, bearer, {
        name: 'bench',
        service_key: 'bench-upstream',
        secret: 'bench-secret',
      })
    ).json()) as { id: string };
    const sid = await upstreamSession(upstream.info.url);
    const directHeaders = { ...MCP_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
    const proxiedOpts = {
      url: `${target.info.url}/mcp/bench-upstream`,
      method: 'POST' as const,
      headers: { ...MCP_HEADERS, ...bearer },
      body: echoCall({ PCID: conn.id }),
    };
    const directOpts = { url: upstream.info.url, method: 'POST' as const, headers: directHeaders, body: echoCall({}) };
    // Warm the gateway's upstream session before measuring.
    await post(proxiedOpts.url, bearer, JSON.parse(proxiedOpts.body));
    const direct = await load('upstream MCP server, direct', directOpts);
    const proxied = await load('same call through the gateway', proxiedOpts);
    report('Proxied tools/call vs the same upstream called directly (50 connections)', direct, [proxied]);
    const n = Number(process.env.BENCH_SEQ_CALLS ?? 1000);
    const seqDirect = await sequential(directOpts, n);
    const seqProxied = await sequential(proxiedOpts, n);
    console.log(`\nAdded latency of the gateway hop (${n} sequential calls each, one keep-alive connection):`);
    console.log('| measure | direct ms | through the gateway ms | added ms |');
    console.log('|---|---:|---:|---:|');
    for (const p of [50, 90, 99])
      console.log(
        `| p${p} | ${pct(seqDirect, p).toFixed(3)} | ${pct(seqProxied, p).toFixed(3)} | ${(pct(seqProxied, p) - pct(seqDirect, p)).toFixed(3)} |`,
      );
    console.log('\nUnder load (50 connections, queueing included):');
    latencyLine('50 connections', direct, proxied);
  } finally {
    await target.stop();
    await upstream.stop();
  }
}
