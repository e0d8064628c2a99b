/**
 * Crash safety (README "Scaling out"): kill -9 the server under load, restart it, and every run
 * whose trigger call got a 200 reaches a terminal state; terminal states are never rewritten.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort, call } from '../../helpers/server.js';
import { startServer, waitReady as ready } from '../../helpers/process.js';

function start(dataDir: string, port: number): ChildProcess {
  return startServer(dataDir, port, { RUN_LEASE_MS: '1000', RUN_CONCURRENCY: '2' });
}

describe('process: crash safety (kill -9 under load, restart)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let child: ChildProcess | undefined;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-crash-'));
  });
  after(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('every accepted run reaches a terminal state after a restart, and none is rewritten', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    child = start(dataDir, port);
    await ready(base);
    const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    const token = (
      await call(base, 'POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        raw: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: b.clientId,
          client_secret: b.clientSecret,
          scope: `org:${b.orgId}`,
        }).toString(),
      })
    ).body.access_token;
    const wf = await call(base, 'POST', '/v1/workflows', {
      token,
      body: {
        name: 'Slow',
        steps: [
          {
            type: 'code',
            name: 'Nap',
            code: 'const end = Date.now() + 300; while (Date.now() < end) { /* busy: the sandbox has no timers */ } return ctx.inputs.n;',
          },
        ],
      },
    });
    const trg = await call(base, 'POST', '/v1/triggers', {
      token,
      body: { automationId: wf.body.automationId, kind: 'api' },
    });

    const accepted: string[] = [];
    let killed = false;
    const fire = async (n: number) => {
      try {
        const res = await fetch(`${base}/ext/triggers/${trg.body.triggerId}`, {
          method: 'POST',
          headers: { 'x-api-key': b.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ n }),
        });
        if (res.status === 200) accepted.push(res.headers.get('x-pf-run-id')!);
      } catch {
        // the server died mid-request: that call got no 200, so nothing is promised for it
      }
    };
    const load = Promise.all(
      Array.from({ length: 60 }, (_, i) => new Promise<void>((r) => setTimeout(() => void fire(i).then(r), i * 15))),
    );
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGKILL');
    killed = true;
    await load;
    expect(killed).to.equal(true);
    expect(accepted.length, 'some calls were accepted before the kill').to.be.greaterThan(5);

    child = start(dataDir, port);
    await ready(base);
    const seen = new Map<string, string>();
    const deadline = Date.now() + 60_000;
    while (seen.size < accepted.length && Date.now() < deadline) {
      for (const runId of accepted) {
        if (seen.has(runId)) continue;
        const s = await call(base, 'GET', `/ext/webhook/${b.apiKey}/runs/${wf.body.automationId}/${runId}/status`);
        expect(s.status, `run ${runId} must exist after the restart`).to.equal(200);
        if (['COMPLETE', 'FAILED', 'TIMEOUT'].includes(s.body.status)) seen.set(runId, s.body.status);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(seen.size, 'accepted runs that reached a terminal state').to.equal(accepted.length);
    await new Promise((r) => setTimeout(r, 1500));
    for (const [runId, status] of seen) {
      const s = await call(base, 'GET', `/ext/webhook/${b.apiKey}/runs/${wf.body.automationId}/${runId}/status`);
      expect(s.body.status, `terminal state of ${runId} is final`).to.equal(status);
    }
    child.kill('SIGTERM');
  });
});
