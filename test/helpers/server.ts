import net from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/config/logger.js';
import { createApp, type App, type AssumedBreach } from '../../src/app.js';
import { createOrganization, createCredential, createApiKey } from '../../src/auth/index.js';
import { createTestStore, type TestStore } from './store.js';
import type { StoreKind } from '../../src/storage/db.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface TestServer {
  baseUrl: string;
  app: App;
  store: TestStore;
  /** Fails the test when any response broke the OpenAPI document. */
  assertResponsesValid(): void;
  close(): Promise<void>;
}

/**
 * A real server on loopback over a fresh store, validating every response against the
 * OpenAPI bundle (DESIGN.md section 2). With `shared`, it runs over another test server's store
 * instead (a second service process on the same database), which its close leaves open.
 * An `env` value undefined removes that default (e.g. PUBLIC_URL); `HOST` is where it listens
 * (127.0.0.1 unless given).
 */
export async function startTestServer(
  kind: StoreKind,
  env: Record<string, string | undefined> = {},
  shared?: TestStore,
): Promise<TestServer> {
  return startWith(kind, env, { shared });
}

/**
 * The same, with the layers `assumeBreach` names turned off through the composition root
 * (src/app.ts AppOptions.assumeBreach), as the tests of the outer layers need; nothing in the
 * configuration or the environment can do that.
 */
export async function startBreachedServer(
  kind: StoreKind,
  assumeBreach: AssumedBreach,
  env: Record<string, string | undefined> = {},
): Promise<TestServer> {
  return startWith(kind, env, { assumeBreach });
}

async function startWith(
  kind: StoreKind,
  env: Record<string, string | undefined>,
  opts: { shared?: TestStore | undefined; assumeBreach?: AssumedBreach },
): Promise<TestServer> {
  const { shared } = opts;
  const store = shared ?? (await createTestStore(kind));
  const port = await freePort();
  const config = loadConfig({
    DATA_DIR: store.dataDir,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Tests talk to servers on loopback (http steps, event receivers); a test of the guard overrides it.
    OUTBOUND_ALLOWLIST: '127.0.0.0/8,::1/128',
    // CI sets strict: a machine without every layer fails there instead of testing less.
    CODE_ISOLATION: process.env.CODE_ISOLATION ?? 'auto',
    ...env,
  });
  const log = createLogger(config.logLevel);
  const app = await createApp(config, log, {
    db: store.db,
    validateResponses: true,
    ...(opts.assumeBreach ? { assumeBreach: opts.assumeBreach } : {}),
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.http.listen(port, env.HOST ?? '127.0.0.1', () => resolve(s));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    app,
    store,
    assertResponsesValid() {
      const failures = app.responseValidator?.failures ?? [];
      expect(
        failures.map((f) => f.message),
        'responses that break the OpenAPI document',
      ).to.deep.equal([]);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      if (!shared) await store.close();
    },
  };
}

export interface TestOrg {
  orgId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  token: string;
}

/** An organisation with a credential, an API key and a runtime token from /oauth/token. */
export async function createTestOrg(server: TestServer, name = 'Test org'): Promise<TestOrg> {
  const { db } = server.app.services;
  const org = await createOrganization(db, { name });
  const { credential, clientSecret } = await createCredential(db, org.id, { label: 'test' });
  const { secret } = await createApiKey(db, org.id, { label: 'test' });
  const res = await fetch(`${server.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: credential.clientId,
      client_secret: clientSecret,
      scope: `org:${org.id}`,
    }),
  });
  expect(res.status, 'token endpoint').to.equal(200);
  const body = (await res.json()) as { access_token: string };
  return { orgId: org.id, clientId: credential.clientId, clientSecret, apiKey: secret, token: body.access_token };
}

export interface JsonResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** fetch + JSON parse (when the body is JSON), for terse tests. */
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string | Uint8Array } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Uint8Array | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}
