/**
 * Switchyard on a fresh temporary sqlite store with BENCH_ORGS organisations (default 8), each
 * with a credential; prints its URL and each organisation's id and runtime token (from
 * /oauth/token) on its first stdout line.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/config/logger.js';
import { createApp } from '../../src/app.js';
import { createOrganization, createCredential } from '../../src/auth/index.js';

const count = Number(process.env.BENCH_ORGS ?? 8);
if (!Number.isInteger(count) || count < 1) throw new Error(`BENCH_ORGS must be a positive integer, got ${count}`);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
const config = loadConfig({
  ...process.env,
  DATA_DIR: dataDir,
  PORT: '0',
  SEED_DEMO: 'false',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
});
const app = await createApp(config, createLogger(config.logLevel));
const server = app.http.listen(0, '127.0.0.1', async () => {
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const { db } = app.services;
  const orgs: Array<{ orgId: string; token: string }> = [];
  for (let i = 0; i < count; i++) {
    const org = await createOrganization(db, { name: `Bench ${i + 1}` });
    const { credential, clientSecret } = await createCredential(db, org.id, { label: 'bench' });
    const res = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: credential.clientId,
        client_secret: clientSecret,
        scope: `org:${org.id}`,
      }),
    });
    const { access_token: token } = (await res.json()) as { access_token: string };
    orgs.push({ orgId: org.id, token });
  }
  process.stdout.write(JSON.stringify({ url, pid: process.pid, orgs }) + '\n');
});
process.on('SIGTERM', () => server.close(() => app.close().then(() => process.exit(0))));
