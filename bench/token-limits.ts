/**
 * Token endpoint failure limits (README "Token endpoint limits"): what 2,000 wrong secrets in a
 * row from one address see, and the correct secret's throughput at /oauth/token with and
 * without an attack under way (wrong secrets for the same client id from 64 other loopback
 * addresses at a steady rate), against a bare node:http server in the same run. BENCH_TOKEN_LIMITS_OFF=1 turns
 * the limits off in the service, for comparison. With REDIS_URL, also one attacking address
 * spreading its wrong secrets over two service processes at once: how many of them each process
 * checked before the block reached it. BENCH_TOKEN_ONLY=correct runs only the correct secret
 * without an attack (and the baseline); BENCH_TOKEN_ONLY=shared only the two processes.
 */
import http from 'node:http';
import { createClient } from 'redis';
import { startServer, load, report, baselineLoad, cpuMs } from './lib.js';

interface Target {
  url: string;
  orgId: string;
  clientId: string;
  clientSecret: string;
}

const form = (t: Target, secret: string) =>
  new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: t.clientId,
    client_secret: secret,
    scope: `org:${t.orgId}`,
  }).toString();

/** One POST /oauth/token over `agent`; the status and the OAuth error code. */
function attempt(t: Target, agent: http.Agent, secret: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${t.url}/oauth/token`,
      { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const error = res.statusCode === 200 ? '' : ` ${(JSON.parse(text) as { error: string }).error}`;
          resolve(`${res.statusCode}${error}`);
        });
      },
    );
    req.on('error', reject);
    req.end(form(t, secret));
  });
}

/** 2,000 wrong secrets one after the other from 127.0.0.2, as a brute-force client would send them. */
async function inARow(t: Target): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, localAddress: '127.0.0.2' });
  const counts = new Map<string, number>();
  let first429 = 0;
  const started = performance.now();
  for (let i = 1; i <= 2000; i++) {
    const outcome = await attempt(t, agent, `sys_wrong_${i}`);
    counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    if (!first429 && outcome.startsWith('429')) first429 = i;
  }
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  console.log('\n## 2,000 wrong secrets in a row, one client id, one address');
  console.log(`first 429 at attempt ${first429 || 'never'}; ${Math.round(2000 / seconds)} attempts/s`);
  for (const [outcome, n] of [...counts].sort()) console.log(`- ${outcome}: ${n}`);
}

/**
 * Wrong secrets for the same client id from 64 loopback addresses at a steady rate
 * (BENCH_TOKEN_ATTACK_RPS, default 1,000/s), until stopped: an open-loop attacker, so the attack
 * costs the service the same number of requests whatever it answers them.
 */
function attack(t: Target, perSecond: number): { stop: () => Promise<Map<string, number>> } {
  const agents = Array.from(
    { length: 64 },
    (_, i) => new http.Agent({ keepAlive: true, localAddress: `127.0.1.${i + 1}` }),
  );
  const byOutcome = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  const started = performance.now();
  const tick = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    for (; sent < due && inFlight.size < 512; sent++) {
      const p: Promise<void> = attempt(t, agents[sent % agents.length]!, `sys_attack_${sent}`).then(
        (outcome) => {
          byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
          inFlight.delete(p);
        },
        () => {
          inFlight.delete(p);
        },
      );
      inFlight.add(p);
    }
    sent = Math.max(sent, due);
  }, 5);
  return {
    async stop() {
      clearInterval(tick);
      await Promise.all(inFlight);
      for (const a of agents) a.destroy();
      return byOutcome;
    },
  };
}

/**
 * With REDIS_URL: 1,000 wrong secrets from one address (127.0.0.4), 8 in flight at each of two
 * service processes sharing the windows. Redis itself (MONITOR) counts the failures recorded
 * against the address, i.e. the attempts whose credentials were checked: past the address limit
 * (30) they are the ones a process let through before it knew of the block.
 */
async function shared(t: Target, limitsEnv: Record<string, string>): Promise<void> {
  const second = await startServer<Target>('bench/servers/switchyard.ts', limitsEnv);
  const agent = new http.Agent({ keepAlive: true, localAddress: '127.0.0.4' });
  const monitor = createClient({ url: process.env.REDIS_URL });
  await monitor.connect();
  const windowKey = `"${limitsEnv.REDIS_PREFIX}:authfail:addr:127.0.0.4"`;
  let recorded = 0;
  let markSeen = () => {};
  const mark = `bench-mark-${process.pid}-${Date.now()}`;
  await monitor.monitor((line: string) => {
    if (line.includes(mark)) markSeen();
    else if (/ "EVAL" /i.test(line) && line.includes(windowKey)) recorded++;
  });
  try {
    const byProcess = [new Map<string, number>(), new Map<string, number>()];
    let sent = 0;
    const worker = async (p: 0 | 1) => {
      const target = p === 0 ? t : second.info;
      while (sent < 1000) {
        const outcome = await attempt(target, agent, `sys_shared_${sent++}`);
        byProcess[p]!.set(outcome, (byProcess[p]!.get(outcome) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => worker((i % 2) as 0 | 1)));
    // Everything Redis ran before this GET has been reported once the GET is.
    const seen = new Promise<void>((resolve) => (markSeen = resolve));
    const marker = monitor.duplicate();
    await marker.connect();
    await marker.get(mark);
    await seen;
    await marker.close();
    console.log('\n## 1,000 wrong secrets from one address over two processes sharing Redis (8 in flight at each)');
    console.log(`credentials checked (failures recorded in Redis): ${recorded}, address limit 30`);
    byProcess.forEach((counts, p) => {
      const all = [...counts].sort().map(([outcome, n]) => `${outcome}: ${n}`);
      console.log(`- process ${p + 1}: ${all.join(', ')}`);
    });
  } finally {
    await monitor.close();
    agent.destroy();
    await second.stop();
  }
}

export async function run(): Promise<void> {
  const only = process.env.BENCH_TOKEN_ONLY;
  const base = only === 'shared' ? undefined : await baselineLoad();
  const off = process.env.BENCH_TOKEN_LIMITS_OFF === '1';
  const limitsEnv: Record<string, string> = off
    ? { TOKEN_FAILURE_LIMIT_PER_CLIENT: '0', TOKEN_FAILURE_LIMIT_PER_ADDRESS: '0' }
    : {};
  // A prefix of this run's own: the windows of an earlier run (60 s) would block its addresses.
  if (process.env.REDIS_URL)
    limitsEnv.REDIS_PREFIX = process.env.REDIS_PREFIX ?? `bench-token-limits-${process.pid}-${Date.now()}`;
  const target = await startServer<Target>('bench/servers/switchyard.ts', limitsEnv);
  const t = target.info;
  try {
    const correct = {
      url: `${t.url}/oauth/token`,
      method: 'POST' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form(t, t.clientSecret),
      connections: 10,
    };
    const redis = process.env.REDIS_URL ? ', REDIS_URL' : '';
    if (only === 'shared') return await shared(t, limitsEnv);
    if (only === 'correct') {
      const cpuBefore = cpuMs(target.child.pid);
      const quiet = await load('POST /oauth/token, correct secret, no attack', correct);
      const cpuUsed = (cpuMs(target.child.pid) ?? NaN) - (cpuBefore ?? NaN);
      report(`Correct secrets at /oauth/token (10 connections${redis})${off ? ', limits off' : ''}`, base!, [quiet]);
      console.log(`service CPU per correct secret: ${Math.round((cpuUsed * 1000) / quiet.requests)} µs`);
      if (quiet.non2xx > 0) throw new Error('a correct secret was refused');
      return;
    }
    await inARow(t);
    const perSecond = Number(process.env.BENCH_TOKEN_ATTACK_RPS ?? 1000);
    // The attack alone for 5 s: the service's CPU per attacking request.
    const cpuBefore = cpuMs(target.child.pid);
    const alone = attack(t, perSecond);
    await new Promise((r) => setTimeout(r, 5000));
    const aloneAnswered = [...(await alone.stop()).values()].reduce((a, b) => a + b, 0);
    const cpuUsed = (cpuMs(target.child.pid) ?? NaN) - (cpuBefore ?? NaN);
    console.log(
      `\nthe attack alone (5 s): ${aloneAnswered} requests answered, ` +
        `${Math.round((cpuUsed * 1000) / aloneAnswered)} µs of service CPU each`,
    );
    const quiet = await load('POST /oauth/token, correct secret, no attack', correct);
    const attacker = attack(t, perSecond);
    const underAttack = await load(`POST /oauth/token, correct secret, during the attack`, correct);
    const byOutcome = await attacker.stop();
    report(`Correct secrets at /oauth/token (10 connections${redis})${off ? ', limits off' : ''}`, base!, [
      quiet,
      underAttack,
    ]);
    const answered = [...byOutcome.values()].reduce((a, b) => a + b, 0);
    const duration = Number(process.env.BENCH_DURATION ?? 10);
    console.log(
      `\nthe attack meanwhile: wrong secrets for the same client id from 64 addresses, ` +
        `${perSecond}/s offered, ${Math.round(answered / duration)}/s answered`,
    );
    for (const [outcome, n] of [...byOutcome].sort()) console.log(`- ${outcome}: ${n}`);
    if (quiet.non2xx > 0 || underAttack.non2xx > 0) throw new Error('a correct secret was refused');
    if (redis) await shared(t, limitsEnv);
  } finally {
    await target.stop();
  }
}
