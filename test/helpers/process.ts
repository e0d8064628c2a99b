/** Server processes for process tests: `src/main.ts` on loopback over a DATA_DIR, its readiness and a token from its bootstrap.json. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { call } from './server.js';

const runFile = promisify(execFile);

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** `node --import tsx src/main.ts` on 127.0.0.1:port, silent, loopback calls allowed; `env` adds to or overrides that. */
export function startServer(dataDir: string, port: number, env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', PUBLIC_URL: `http://127.0.0.1:${port}`,
      OUTBOUND_ALLOWLIST: '127.0.0.0/8', ...env,
    },
    stdio: 'ignore',
  });
}

/** Waits for /readyz to answer 200. */
export async function waitReady(base: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}

/** A runtime token for the demo organisation of DATA_DIR/bootstrap.json, with that file's contents. */
export async function bootstrapToken(base: string, dataDir: string): Promise<{ token: string; b: any }> {
  const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
  const res = await call(base, 'POST', '/oauth/token', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, raw: new URLSearchParams({ grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.clientSecret, scope: `org:${b.orgId}` }).toString() });
  expect(res.status, res.text).to.equal(200);
  return { token: res.body.access_token, b };
}

export interface CliResult { code: number; stdout: string; stderr: string }

/** `switchyard …args` (bin/switchyard.js) with `env` over this process's environment; a non-zero exit is a result, not a throw. */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await runFile(process.execPath, [path.join(ROOT, 'bin/switchyard.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
