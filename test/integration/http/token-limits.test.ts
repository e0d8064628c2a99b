/**
 * Limits on failed client authentications at the token endpoints (openapi/auth.yaml, README
 * "Token endpoint limits"), over real HTTP from several loopback source addresses (a client
 * socket bound to 127.0.0.x), with every response validated against the OpenAPI bundle. The
 * limits do not depend on the store, so these run on sqlite only; the Redis-backed windows run
 * on the machine's Redis, shared by two service instances.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestServer, createTestOrg, type TestServer, type TestOrg } from '../../helpers/server.js';
import { monitorRedis } from '../../helpers/redis-monitor.js';
import { dropRedisKeys } from '../../helpers/store.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: { error?: string; error_description?: string; access_token?: string; token?: string };
  text: string;
}

/** One POST from the loopback address `from` (a fresh connection bound to it). */
function post(baseUrl: string, opts: { path: string; from: string; headers: Record<string, string>; body: string }) {
  const url = new URL(opts.path, baseUrl);
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: opts.headers, localAddress: opts.from, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(text) as Answer['body'],
            text,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

function oauthToken(server: TestServer, from: string, fields: { clientId: string; secret: string; orgId: string }) {
  return post(server.baseUrl, {
    path: '/oauth/token',
    from,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: fields.clientId,
      client_secret: fields.secret,
      scope: `org:${fields.orgId}`,
    }).toString(),
  });
}

function legacyToken(server: TestServer, from: string, fields: { secret: string; orgId: string }) {
  return post(server.baseUrl, {
    path: '/auth/token',
    from,
    headers: { 'content-type': 'application/json', 'x-api-key': fields.secret, 'x-selected-org': fields.orgId },
    body: '{}',
  });
}

const wrongSecret = () => `sys_${randomBytes(20).toString('hex')}`;
const madeUpClientId = () => `cli_${randomBytes(16).toString('hex')}`;

/** A 429 as documented: the code, a Retry-After of whole seconds within the window, no-store, no secret. */
function expectLimited(res: Answer, error: 'invalid_client' | 'too_many_requests', windowS = 60): void {
  expect(res.status, res.text).to.equal(429);
  expect(res.body.error).to.equal(error);
  expect(res.body.error_description)
    .to.be.a('string')
    .and.match(/retry after \d+ seconds/);
  const retryAfter = res.headers['retry-after'];
  expect(retryAfter).to.match(/^[1-9][0-9]*$/);
  expect(Number(retryAfter)).to.be.within(1, windowS);
  expect(res.headers['cache-control']).to.equal('no-store');
  expect(res.headers['www-authenticate']).to.equal(undefined);
}

describe('HTTP: failed client authentication limits (op:issueOauthToken, op:exchangeLegacyToken)', () => {
  describe('default limits: 10 failures per client, 30 per source address, per minute', () => {
    let server: TestServer;
    let org: TestOrg;
    before(async () => {
      server = await startTestServer('sqlite');
      org = await createTestOrg(server, 'Limits');
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('a client id under attack: 429 after 10 wrong secrets, while its correct secret from another address gets tokens at once', async () => {
      const victim = { clientId: org.clientId, orgId: org.orgId };
      for (let i = 1; i <= 10; i++) {
        const res = await oauthToken(server, '127.0.0.2', { ...victim, secret: wrongSecret() });
        expect([res.status, res.body.error], `attempt ${i}`).to.deep.equal([401, 'invalid_client']);
      }
      const limited = await oauthToken(server, '127.0.0.2', { ...victim, secret: wrongSecret() });
      expectLimited(limited, 'invalid_client');
      expect(limited.text).to.not.contain(org.clientSecret);

      // The holder, elsewhere, is neither refused nor slowed.
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const ok = await oauthToken(server, '127.0.0.3', { ...victim, secret: org.clientSecret });
        expect(ok.status, ok.text).to.equal(200);
        expect(ok.body.access_token).to.be.a('string');
        expect(ok.headers['retry-after']).to.equal(undefined);
        // Not held back: a throttle that delayed it would take seconds (Retry-After is up to 60 s).
        expect(performance.now() - started).to.be.below(5000);
      }
      // Even from the attacker's address, until that address is over its own limit (11 < 30).
      expect((await oauthToken(server, '127.0.0.2', { ...victim, secret: org.clientSecret })).status).to.equal(200);

      // Failures 12 to 30 from the address still answer 429 invalid_client; then the address is refused outright.
      for (let i = 12; i <= 30; i++) {
        expectLimited(await oauthToken(server, '127.0.0.2', { ...victim, secret: wrongSecret() }), 'invalid_client');
      }
      expectLimited(await oauthToken(server, '127.0.0.2', { ...victim, secret: wrongSecret() }), 'too_many_requests');
      // Refused before the credentials are read: the right secret from there waits too (documented).
      expectLimited(
        await oauthToken(server, '127.0.0.2', { ...victim, secret: org.clientSecret }),
        'too_many_requests',
      );
      // Another address still gets its token.
      expect((await oauthToken(server, '127.0.0.3', { ...victim, secret: org.clientSecret })).status).to.equal(200);
    });

    it('per source address across many client ids, shared by both endpoints', async () => {
      const from = '127.0.0.4';
      for (let i = 1; i <= 30; i++) {
        const res = await oauthToken(server, from, {
          clientId: madeUpClientId(),
          secret: wrongSecret(),
          orgId: org.orgId,
        });
        expect([res.status, res.body.error], `attempt ${i}`).to.deep.equal([401, 'invalid_client']);
      }
      expectLimited(
        await oauthToken(server, from, { clientId: madeUpClientId(), secret: wrongSecret(), orgId: org.orgId }),
        'too_many_requests',
      );
      expectLimited(await legacyToken(server, from, { secret: wrongSecret(), orgId: org.orgId }), 'too_many_requests');
      expectLimited(
        await legacyToken(server, from, { secret: org.clientSecret, orgId: org.orgId }),
        'too_many_requests',
      );
      // Client ids that were never issued and well-formed ones are counted alike (a 429 tells nothing).
      const other = await oauthToken(server, '127.0.0.5', { clientId: 'not-a-client', secret: 'x', orgId: org.orgId });
      expect(other.status).to.equal(401);
    });

    it('the legacy exchange: 429 after 10 wrong keys naming one organisation; the right key still gets its token', async () => {
      const target = await createTestOrg(server, 'Legacy target');
      for (let i = 1; i <= 10; i++) {
        const res = await legacyToken(server, '127.0.0.6', { secret: wrongSecret(), orgId: target.orgId });
        expect([res.status, res.body.error], `attempt ${i}`).to.deep.equal([401, 'invalid_client']);
      }
      expectLimited(
        await legacyToken(server, '127.0.0.6', { secret: wrongSecret(), orgId: target.orgId }),
        'invalid_client',
      );
      const ok = await legacyToken(server, '127.0.0.7', { secret: target.clientSecret, orgId: target.orgId });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.token).to.be.a('string');
      expect(
        (await legacyToken(server, '127.0.0.6', { secret: target.clientSecret, orgId: target.orgId })).status,
      ).to.equal(200);
    });
  });

  describe('window expiry (TOKEN_FAILURE_WINDOW_MS=2000, 3 failures per address)', () => {
    let server: TestServer;
    let org: TestOrg;
    before(async () => {
      server = await startTestServer('sqlite', {
        TOKEN_FAILURE_WINDOW_MS: '2000',
        TOKEN_FAILURE_LIMIT_PER_ADDRESS: '3',
      });
      org = await createTestOrg(server, 'Expiry');
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('answers 429 while the window is full, and 401 again once its Retry-After has passed', async () => {
      const attempt = () =>
        oauthToken(server, '127.0.0.8', { clientId: org.clientId, secret: wrongSecret(), orgId: org.orgId });
      for (let i = 0; i < 3; i++) expect((await attempt()).status).to.equal(401);
      const limited = await attempt();
      expectLimited(limited, 'too_many_requests', 2);
      expectLimited(await attempt(), 'too_many_requests', 2);
      // Retry-After tells the truth: waited out, the address is heard again.
      await new Promise((r) => setTimeout(r, Number(limited.headers['retry-after']) * 1000 + 100));
      expect((await attempt()).status).to.equal(401);
    });
  });

  describe('with REDIS_URL: the windows are shared by two service instances', () => {
    const prefix = `sy-authfail-${process.pid}-${Date.now()}`;
    let one: TestServer;
    let two: TestServer;
    let org: TestOrg;
    before(async () => {
      const env = { REDIS_URL, REDIS_PREFIX: prefix };
      one = await startTestServer('sqlite', env);
      two = await startTestServer('sqlite', env, one.store);
      org = await createTestOrg(one, 'Shared');
    });
    after(async () => {
      await two?.close();
      await one?.close();
      await dropRedisKeys(REDIS_URL, prefix);
    });
    afterEach(() => {
      one.assertResponsesValid();
      two.assertResponsesValid();
    });

    it('failures at either instance count together, per client and per address', async () => {
      const victim = { clientId: org.clientId, orgId: org.orgId };
      for (let i = 1; i <= 10; i++) {
        const server = i % 2 ? one : two;
        expect((await oauthToken(server, '127.0.0.9', { ...victim, secret: wrongSecret() })).status).to.equal(401);
      }
      expectLimited(await oauthToken(one, '127.0.0.9', { ...victim, secret: wrongSecret() }), 'invalid_client');
      expectLimited(await oauthToken(two, '127.0.0.9', { ...victim, secret: wrongSecret() }), 'invalid_client');
      expect((await oauthToken(two, '127.0.0.10', { ...victim, secret: org.clientSecret })).status).to.equal(200);
      // 12 failures so far from .9; 18 more (some at each instance) fill its window.
      for (let i = 0; i < 18; i++)
        await oauthToken(i % 2 ? one : two, '127.0.0.9', { ...victim, secret: wrongSecret() });
      expectLimited(
        await legacyToken(one, '127.0.0.9', { secret: org.clientSecret, orgId: org.orgId }),
        'too_many_requests',
      );
      expectLimited(await oauthToken(two, '127.0.0.9', { ...victim, secret: org.clientSecret }), 'too_many_requests');
    });

    it('a correct secret from an address not blocked costs no Redis command; a block made through one instance is refused by the others at once', async () => {
      // The limits' keys and channel: the run queue's own blocking pop runs meanwhile, in its keys.
      const monitor = await monitorRedis(REDIS_URL, `${prefix}:authfail:`);
      let three: TestServer | undefined;
      try {
        const victim = { clientId: org.clientId, orgId: org.orgId };
        await monitor.take();
        for (const server of [one, two, one]) {
          expect((await oauthToken(server, '127.0.0.11', { ...victim, secret: org.clientSecret })).status).to.equal(
            200,
          );
        }
        expect((await legacyToken(two, '127.0.0.11', { secret: org.clientSecret, orgId: org.orgId })).status).to.equal(
          200,
        );
        expect(await monitor.take(), 'Redis commands of four correct authentications').to.deep.equal([]);

        // 30 failures at one: two, which saw none of them, refuses the address without asking Redis.
        for (let i = 0; i < 30; i++) await oauthToken(one, '127.0.0.12', { ...victim, secret: wrongSecret() });
        const announced = await monitor.take();
        expect(
          announced.filter((line) => /"publish"/i.test(line)),
          'the block announced',
        ).to.have.length(1);
        expectLimited(
          await oauthToken(two, '127.0.0.12', { ...victim, secret: org.clientSecret }),
          'too_many_requests',
        );
        expect((await oauthToken(two, '127.0.0.13', { ...victim, secret: org.clientSecret })).status).to.equal(200);
        expect(await monitor.take(), 'Redis commands of the checks at two').to.deep.equal([]);

        // A process started during the attack refuses the attacker at once.
        three = await startTestServer('sqlite', { REDIS_URL, REDIS_PREFIX: prefix }, one.store);
        await monitor.take();
        expectLimited(
          await legacyToken(three, '127.0.0.12', { secret: org.clientSecret, orgId: org.orgId }),
          'too_many_requests',
        );
        expect(
          (await legacyToken(three, '127.0.0.13', { secret: org.clientSecret, orgId: org.orgId })).status,
        ).to.equal(200);
        expect(await monitor.take(), 'Redis commands of the checks at three').to.deep.equal([]);
        three.assertResponsesValid();
      } finally {
        await three?.close();
        await monitor.close();
      }
    });
  });
});
