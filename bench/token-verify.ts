/**
 * Token benchmark: token verification on an authenticated no-op management call
 * (GET /v1/organization with a Bearer token) against a bare node:http server, same run.
 */
import { startServer, load, report } from './lib.js';

export async function run(): Promise<void> {
  const baseline = await startServer<{ url: string }>('bench/servers/baseline.ts');
  const target = await startServer<{ url: string; token: string }>('bench/servers/switchyard.ts');
  try {
    const base = await load('bare node:http', { url: `${baseline.info.url}/v1/organization` });
    const authed = await load('GET /v1/organization (Bearer JWT verified)', {
      url: `${target.info.url}/v1/organization`,
      headers: { authorization: `Bearer ${target.info.token}` },
    });
    const unauthed = await load('GET /healthz (no auth, same pipeline)', { url: `${target.info.url}/healthz` });
    report('Token verification on an authenticated no-op call (50 connections)', base, [authed, unauthed]);
    if (authed.non2xx > 0) throw new Error(`${authed.non2xx} non-2xx responses on the authenticated call`);
  } finally {
    await Promise.all([baseline.stop(), target.stop()]);
  }
}
