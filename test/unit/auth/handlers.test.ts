import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import type { Services } from '../../../src/services.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  ClientAuthLimiter,
  MemoryFailureWindows,
  createClientAuthLimiter,
  createCredential,
  createOrganization,
  createTokenService,
  settleUsageWrites,
  type AuthContext,
  type TokenService,
} from '../../../src/auth/index.js';
import { authHandlers } from '../../../src/auth/handlers/index.js';
import { CallTargets } from '../../../src/triggers/index.js';
import type { Config } from '../../../src/config/index.js';
import { AppError, OAuthError } from '../../../src/errors/index.js';
import type { HandlerRequest, OperationId, RequestContext } from '../../../src/services.js';
import { capturingLog, testClock, testConfig } from './helpers.js';

const kinds = await storeKinds();
const h = authHandlers;

/**
 * The parts of a request a test sets. Loose on purpose: malformed forms, repeated parameters
 * and bad labels prove the handlers' own checks (the OAuth error shapes of RFC 6749).
 */
interface RequestParts {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  headers?: IncomingHttpHeaders;
  body?: unknown;
  raw?: unknown;
}

/** The HandlerRequest<K> the pipeline would build (operationId and raw are not read by these handlers). */
function req<K extends OperationId>(over: RequestParts = {}): HandlerRequest<K> {
  return {
    params: {},
    query: {},
    headers: {},
    body: undefined,
    contentType: undefined,
    raw: { socket: { remoteAddress: '127.0.0.1' } },
    ...over,
  } as unknown as HandlerRequest<K>;
}

/** A handler context as the pipeline builds it: auth is set for bearerAuth operations only. */
type Context<A extends AuthContext | undefined> = Omit<RequestContext, 'auth'> & { auth: A };

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the handler to fail');
}

async function oauthFailure(p: Promise<unknown>, code: string, status: number): Promise<OAuthError> {
  const err = await failure(p);
  expect(err).to.be.instanceOf(OAuthError);
  const e = err as OAuthError;
  expect(e.error, e.message).to.equal(code);
  expect(e.status).to.equal(status);
  expect(e.headers?.['Cache-Control']).to.equal('no-store');
  if (code === 'invalid_client') expect(e.headers?.['WWW-Authenticate']).to.equal('Basic realm="switchyard"');
  else expect(e.headers?.['WWW-Authenticate']).to.equal(undefined);
  return e;
}

async function appFailure(p: Promise<unknown>, key: string): Promise<void> {
  const err = await failure(p);
  expect(err).to.be.instanceOf(AppError);
  expect((err as AppError).key).to.equal(key);
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

for (const kind of kinds) {
  describe(`auth: HTTP handlers (${kind})`, () => {
    let store: TestStore;
    let config: Config;
    let tokens: TokenService;
    let limiter: ClientAuthLimiter;
    let logs: ReturnType<typeof capturingLog>;
    let orgA: string;
    let orgB: string;
    let cred: { id: string; clientId: string; secret: string };
    const secrets: string[] = [];
    let callTargets: CallTargets | undefined;

    function ctx(): Context<undefined>;
    function ctx(auth: AuthContext): Context<AuthContext>;
    function ctx(auth?: AuthContext): Context<AuthContext | undefined> {
      // These handlers use only config, db, log, tokens and the triggers' call targets (whether
      // the organisation's triggers still need an API key) of the services.
      callTargets ??= new CallTargets(store.db, config.revocationCacheMs);
      return {
        services: { config, db: store.db, log: logs.log, tokens, clientAuthLimiter: limiter, callTargets } as Services,
        log: logs.log,
        requestId: 'req-test',
        auth,
      };
    }
    /** A bearer operation's context without auth, which the pipeline never builds (proves the handlers' guard). */
    const withoutAuth = (): Context<AuthContext> => ctx() as Context<AuthContext | undefined> as Context<AuthContext>;
    const form = (over: Record<string, unknown> = {}) => ({
      grant_type: 'client_credentials',
      client_id: cred.clientId,
      client_secret: cred.secret,
      scope: `org:${orgA}`,
      ...over,
    });
    const authFor = async (orgId: string): Promise<AuthContext> => {
      const c = await createCredential(store.db, orgId, { label: 'mgmt' });
      secrets.push(c.clientSecret);
      return tokens.verify(
        (await tokens.issue({ orgId, credentialId: c.credential.id, clientId: c.credential.clientId })).accessToken,
      );
    };

    beforeEach(async () => {
      store = await createTestStore(kind);
      callTargets = undefined;
      config = testConfig(store.dataDir);
      logs = capturingLog();
      tokens = await createTokenService({ db: store.db, config, log: logs.log });
      limiter = createClientAuthLimiter({ config, log: logs.log });
      orgA = (await createOrganization(store.db, { name: 'A' })).id;
      orgB = (await createOrganization(store.db, { name: 'B' })).id;
      const c = await createCredential(store.db, orgA, { label: 'ci' });
      cred = { id: c.credential.id, clientId: c.credential.clientId, secret: c.clientSecret };
      secrets.length = 0;
      secrets.push(c.clientSecret);
    });
    afterEach(async () => {
      const text = logs.text();
      for (const s of secrets) expect(text.includes(s), 'a secret reached the log').to.equal(false);
      await tokens.close();
      await settleUsageWrites();
      await store.close();
    });

    it('issueOauthToken: client_secret_post and client_secret_basic issue a verifiable token, uncached', async () => {
      const post = await h.issueOauthToken(req({ body: form() }), ctx());
      expect(post.status).to.equal(200);
      expect(post.headers).to.deep.equal({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
      const body = post.body as { access_token: string; token_type: string; expires_in: number };
      expect(body.token_type).to.equal('Bearer');
      expect(body.expires_in).to.equal(3600);
      expect(Object.keys(body).sort()).to.deep.equal(['access_token', 'expires_in', 'token_type']);
      expect(await tokens.verify(body.access_token)).to.include({
        orgId: orgA,
        credentialId: cred.id,
        clientId: cred.clientId,
      });

      const viaBasic = await h.issueOauthToken(
        req({
          headers: { authorization: basic(cred.clientId, cred.secret) },
          body: { grant_type: 'client_credentials', scope: `org:${orgA}` },
        }),
        ctx(),
      );
      expect(viaBasic.status).to.equal(200);
      const token = (viaBasic.body as { access_token: string }).access_token;
      expect((await tokens.verify(token)).orgId).to.equal(orgA);
    });

    it('issueOauthToken: malformed requests are invalid_request or unsupported_grant_type (400)', async () => {
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ grant_type: undefined }) }), ctx()),
        'invalid_request',
        400,
      );
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ grant_type: 'password' }) }), ctx()),
        'unsupported_grant_type',
        400,
      );
      // RFC 6749 section 5.2: missing client authentication is invalid_client (401).
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ client_secret: undefined }) }), ctx()),
        'invalid_client',
        401,
      );
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ client_id: undefined }) }), ctx()),
        'invalid_client',
        401,
      );
      await oauthFailure(h.issueOauthToken(req({ body: form({ scope: undefined }) }), ctx()), 'invalid_request', 400);
      await oauthFailure(h.issueOauthToken(req({ body: form({ scope: 'admin' }) }), ctx()), 'invalid_request', 400);
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ scope: `org:${orgA} org:${orgB}` }) }), ctx()),
        'invalid_request',
        400,
      );
      await oauthFailure(
        h.issueOauthToken(req({ body: form({ scope: [`org:${orgA}`, `org:${orgA}`] }) }), ctx()),
        'invalid_request',
        400,
      );
      await oauthFailure(h.issueOauthToken(req({ body: undefined }), ctx()), 'invalid_request', 400);
      // Basic and body credentials that differ (identical ones are accepted).
      await oauthFailure(
        h.issueOauthToken(
          req({
            headers: { authorization: basic(cred.clientId, cred.secret) },
            body: form({ client_secret: 'sys_other' }),
          }),
          ctx(),
        ),
        'invalid_request',
        400,
      );
    });

    it('issueOauthToken: a scope for another organisation is invalid_scope', async () => {
      await oauthFailure(h.issueOauthToken(req({ body: form({ scope: `org:${orgB}` }) }), ctx()), 'invalid_scope', 400);
    });

    it('issueOauthToken: failed client authentication is invalid_client (401) with a Basic challenge', async () => {
      const other = await createCredential(store.db, orgA, { label: 'other' });
      secrets.push(other.clientSecret);
      const cases: [string, HandlerRequest<'issueOauthToken'>][] = [
        ['wrong secret', req({ body: form({ client_secret: other.clientSecret }) })],
        ['unknown client', req({ body: form({ client_id: 'cli_00000000000000000000000000000000' }) })],
        [
          'basic wrong secret',
          req({
            headers: { authorization: basic(cred.clientId, 'nope') },
            body: { grant_type: 'client_credentials', scope: `org:${orgA}` },
          }),
        ],
        [
          'basic not base64',
          req({
            headers: { authorization: 'Basic !!!' },
            body: { grant_type: 'client_credentials', scope: `org:${orgA}` },
          }),
        ],
        [
          'basic without colon',
          req({
            headers: { authorization: `Basic ${Buffer.from('nocolon').toString('base64')}` },
            body: { grant_type: 'client_credentials', scope: `org:${orgA}` },
          }),
        ],
        [
          'bearer scheme',
          req({
            headers: { authorization: 'Bearer abc' },
            body: { grant_type: 'client_credentials', scope: `org:${orgA}` },
          }),
        ],
      ];
      for (const [name, r] of cases) {
        const e = await oauthFailure(h.issueOauthToken(r, ctx()), 'invalid_client', 401);
        expect(e.message, name).to.be.a('string').and.not.include(cred.secret);
      }
      await tokens.revokeCredential(orgA, cred.id, { force: true });
      await oauthFailure(h.issueOauthToken(req({ body: form() }), ctx()), 'invalid_client', 401);
    });

    it('the token endpoints past the failure limits: 429 with Retry-After, the right secret still issues, no secret logged', async () => {
      const clock = testClock(1_700_000_000_000);
      limiter = new ClientAuthLimiter(
        new MemoryFailureWindows(100),
        { windowMs: 60_000, perAccount: 2, perAddress: 5 },
        { now: clock.now },
      );
      const from = (address: string) => ({ socket: { remoteAddress: address } });
      const wrong = () => {
        const secret = `sys_wrong_${secrets.length}`;
        secrets.push(secret);
        return secret;
      };
      const limited = async (p: Promise<unknown>, code: string, retryAfter: string) => {
        const e = await failure(p);
        expect(e).to.be.instanceOf(OAuthError);
        const err = e as OAuthError;
        expect([err.status, err.error, err.headers?.['Retry-After']]).to.deep.equal([429, code, retryAfter]);
        expect(err.headers?.['Cache-Control']).to.equal('no-store');
        for (const s of secrets) expect(err.message).to.not.include(s);
      };
      const attack = () => req<'issueOauthToken'>({ raw: from('10.0.0.1'), body: form({ client_secret: wrong() }) });
      await oauthFailure(h.issueOauthToken(attack(), ctx()), 'invalid_client', 401);
      clock.advance(10_000);
      await oauthFailure(h.issueOauthToken(attack(), ctx()), 'invalid_client', 401);
      await limited(h.issueOauthToken(attack(), ctx()), 'invalid_client', '60');
      expect((await h.issueOauthToken(req({ raw: from('10.0.0.2'), body: form() }), ctx())).status).to.equal(200);
      expect((await h.issueOauthToken(req({ raw: from('10.0.0.1'), body: form() }), ctx())).status).to.equal(200);
      // Legacy: the organisation stands for the client; the address window is the same.
      const legacy = (key: string, address: string) =>
        h.exchangeLegacyToken(
          req({ raw: from(address), headers: { 'x-api-key': key, 'x-selected-org': orgA } }),
          ctx(),
        );
      await oauthFailure(legacy(wrong(), '10.0.0.1'), 'invalid_client', 401);
      await oauthFailure(legacy(wrong(), '10.0.0.1'), 'invalid_client', 401);
      await limited(legacy(cred.secret, '10.0.0.1'), 'too_many_requests', '50');
      await limited(legacy(wrong(), '10.0.0.3'), 'invalid_client', '60');
      expect((await legacy(cred.secret, '10.0.0.3')).status).to.equal(200);
      expect(logs.text()).to.contain('over its failure limit');
    });

    it('exchangeLegacyToken: the client secret and the selected org give {token}', async () => {
      const ok = await h.exchangeLegacyToken(
        req({ headers: { 'x-api-key': cred.secret, 'x-selected-org': orgA }, body: {} }),
        ctx(),
      );
      expect(ok.status).to.equal(200);
      expect(ok.headers?.['Cache-Control']).to.equal('no-store');
      expect(Object.keys(ok.body as object)).to.deep.equal(['token']);
      expect((await tokens.verify((ok.body as { token: string }).token)).credentialId).to.equal(cred.id);
      await oauthFailure(
        h.exchangeLegacyToken(req({ headers: { 'x-selected-org': orgA } }), ctx()),
        'invalid_request',
        400,
      );
      await oauthFailure(
        h.exchangeLegacyToken(req({ headers: { 'x-api-key': cred.secret } }), ctx()),
        'invalid_request',
        400,
      );
      await oauthFailure(
        h.exchangeLegacyToken(req({ headers: { 'x-api-key': cred.secret, 'x-selected-org': orgB } }), ctx()),
        'invalid_scope',
        400,
      );
      await oauthFailure(
        h.exchangeLegacyToken(req({ headers: { 'x-api-key': 'sys_wrong', 'x-selected-org': orgA } }), ctx()),
        'invalid_client',
        401,
      );
      await oauthFailure(
        h.exchangeLegacyToken(req({ headers: { 'x-api-key': cred.clientId, 'x-selected-org': orgA } }), ctx()),
        'invalid_client',
        401,
      );
    });

    it('getJwks and getAuthorizationServerMetadata publish keys and RFC 8414 metadata', async () => {
      const jwks = await h.getJwks(req(), ctx());
      expect(jwks.status).to.equal(200);
      expect(jwks.headers).to.deep.equal({ 'Cache-Control': 'public, max-age=300' });
      const { keys } = jwks.body as { keys: { kid: string; alg: string }[] };
      expect(keys).to.have.length(1);
      expect(keys[0]!.alg).to.equal('ES256');
      const meta = await h.getAuthorizationServerMetadata(req(), ctx());
      expect(meta.body).to.deep.equal({
        issuer: 'http://127.0.0.1:8080',
        token_endpoint: 'http://127.0.0.1:8080/oauth/token',
        jwks_uri: 'http://127.0.0.1:8080/.well-known/jwks.json',
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        response_types_supported: [],
      });
    });

    it("credential management: create, list with paging, get, revoke; scoped to the token's organisation", async () => {
      const authA = await authFor(orgA);
      const authB = await authFor(orgB);
      const created = await h.createCredential(req({ body: { label: '  deploy bot ' } }), ctx(authA));
      expect(created.status).to.equal(201);
      expect(created.headers?.['Cache-Control']).to.equal('no-store');
      const view = created.body as {
        id: string;
        clientId: string;
        clientSecret: string;
        label: string;
        orgId: string;
        revokedAt: null;
      };
      secrets.push(view.clientSecret);
      expect(view.label).to.equal('deploy bot');
      expect(view.orgId).to.equal(orgA);
      expect(view.clientSecret).to.match(/^sys_/);
      // Active immediately (we beat the spec's 60-second activation bound).
      const issued = await h.issueOauthToken(
        req({ body: form({ client_id: view.clientId, client_secret: view.clientSecret }) }),
        ctx(),
      );
      const newToken = (issued.body as { access_token: string }).access_token;

      const page1 = await h.listCredentials(req({ query: { limit: 2 } }), ctx(authA));
      const p1 = page1.body as { items: { id: string }[]; nextCursor: string | null };
      expect(p1.items).to.have.length(2);
      const page2 = await h.listCredentials(req({ query: { limit: 2, cursor: p1.nextCursor } }), ctx(authA));
      const p2 = page2.body as { items: { id: string }[]; nextCursor: string | null };
      expect([...p1.items, ...p2.items].map((c) => c.id)).to.include(view.id);
      expect([...p1.items, ...p2.items]).to.have.length(3);
      expect(p2.nextCursor).to.equal(null);
      for (const limit of [0, 201, Number.NaN, 1.5]) {
        await appFailure(h.listCredentials(req({ query: { limit } }), ctx(authA)), 'ERR_REQUEST_INVALID');
      }
      await appFailure(h.listCredentials(req({ query: { cursor: 'bogus' } }), ctx(authA)), 'ERR_INVALID_CURSOR');
      await appFailure(h.createCredential(req({ body: { label: 7 } }), ctx(authA)), 'ERR_REQUEST_INVALID');
      const listB = (await h.listCredentials(req(), ctx(authB))).body as { items: { id: string }[] };
      expect(listB.items.map((c) => c.id)).to.not.include(view.id);

      expect((await h.getCredential(req({ params: { credentialId: view.id } }), ctx(authA))).body).to.include({
        id: view.id,
        revokedAt: null,
      });
      expect(
        Object.keys((await h.getCredential(req({ params: { credentialId: view.id } }), ctx(authA))).body as object),
      ).to.not.include('clientSecret');
      await appFailure(h.getCredential(req({ params: { credentialId: view.id } }), ctx(authB)), 'ERR_NOT_FOUND');
      await appFailure(h.revokeCredential(req({ params: { credentialId: view.id } }), ctx(authB)), 'ERR_NOT_FOUND');

      const revoked = await h.revokeCredential(req({ params: { credentialId: view.id } }), ctx(authA));
      expect(revoked.status).to.equal(200);
      expect((revoked.body as { revokedAt: string | null }).revokedAt).to.be.a('string');
      await appFailure(tokens.verify(newToken), 'ERR_AUTH_INVALID_TOKEN');
      await appFailure(h.listCredentials(req(), withoutAuth()), 'ERR_AUTH_MISSING_TOKEN');
    });

    it('API key management: create shows the key once, list, get, revoke; other organisations get 404', async () => {
      const authA = await authFor(orgA);
      const authB = await authFor(orgB);
      const created = await h.createApiKey(req({ body: { label: 'trigger' } }), ctx(authA));
      expect(created.status).to.equal(201);
      const body = created.body as {
        id: string;
        apiKey: string;
        hint: string;
        label: string;
        revokedAt: null;
        createdAt: string;
      };
      secrets.push(body.apiKey);
      expect(body.apiKey).to.match(/^syk_/);
      expect(body.hint).to.equal(body.apiKey.slice(-4));
      expect(Object.keys(body).sort()).to.deep.equal(['apiKey', 'createdAt', 'hint', 'id', 'label', 'revokedAt']);
      const defaulted = await h.createApiKey(req({ body: undefined }), ctx(authA));
      secrets.push((defaulted.body as { apiKey: string }).apiKey);
      expect((defaulted.body as { label: string }).label).to.equal('API key');

      const list = (await h.listApiKeys(req({ query: { limit: 1 } }), ctx(authA))).body as {
        items: { id: string; apiKey?: string }[];
        nextCursor: string | null;
      };
      expect(list.items.map((k) => k.id)).to.deep.equal([body.id]);
      expect(list.items[0]!.apiKey).to.equal(undefined);
      expect(list.nextCursor).to.be.a('string');
      expect(((await h.listApiKeys(req(), ctx(authB))).body as { items: unknown[] }).items).to.deep.equal([]);
      await appFailure(h.getApiKey(req({ params: { keyId: body.id } }), ctx(authB)), 'ERR_NOT_FOUND');
      await appFailure(h.revokeApiKey(req({ params: { keyId: body.id } }), ctx(authB)), 'ERR_NOT_FOUND');
      expect(
        ((await h.getApiKey(req({ params: { keyId: body.id } }), ctx(authA))).body as { revokedAt: null }).revokedAt,
      ).to.equal(null);
      const revoked = (await h.revokeApiKey(req({ params: { keyId: body.id } }), ctx(authA))).body as {
        revokedAt: string | null;
      };
      expect(revoked.revokedAt).to.be.a('string');
    });

    it("getOrganization returns the token's organisation", async () => {
      const authB = await authFor(orgB);
      const res = await h.getOrganization(req(), ctx(authB));
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ id: orgB, name: 'B' });
      expect(Object.keys(res.body as object).sort()).to.deep.equal(['createdAt', 'id', 'name']);
      await appFailure(h.getOrganization(req(), withoutAuth()), 'ERR_AUTH_MISSING_TOKEN');
    });
  });
}
