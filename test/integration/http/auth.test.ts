/**
 * Tokens and credentials over real HTTP (spec section 6, "Authentication"), on both stores,
 * with every response validated against the OpenAPI bundle.
 */
import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader, SignJWT, importJWK, exportJWK, generateKeyPair, type JWK } from 'jose';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';

const kinds = await storeKinds();
const form = (fields: Record<string, string>) => ({
  'content-type': 'application/x-www-form-urlencoded',
  body: new URLSearchParams(fields).toString(),
});

for (const kind of kinds) {
  describe(`HTTP: tokens and credentials (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    const token = (fields: Record<string, string>, headers: Record<string, string> = {}) => {
      const f = form(fields);
      return call(server.baseUrl, 'POST', '/oauth/token', {
        headers: { 'content-type': f['content-type'], ...headers },
        raw: f.body,
      });
    };

    describe('op:issueOauthToken POST /oauth/token', () => {
      it('issues an ES256 JWT with the documented claims for client_secret_post', async () => {
        const res = await token({
          grant_type: 'client_credentials',
          client_id: org.clientId,
          client_secret: org.clientSecret,
          scope: `org:${org.orgId}`,
        });
        expect(res.status).to.equal(200);
        expect(res.headers.get('cache-control')).to.equal('no-store');
        expect(res.body).to.include({ token_type: 'Bearer', expires_in: 3600 });
        const header = decodeProtectedHeader(res.body.access_token);
        expect(header.alg).to.equal('ES256');
        expect(header.kid).to.be.a('string');
        const claims = decodeJwt(res.body.access_token);
        expect(claims).to.include({ iss: server.baseUrl, sub: org.clientId, aud: 'switchyard', org: org.orgId });
        expect(claims.exp! - claims.iat!).to.equal(3600);
        expect(claims.jti).to.be.a('string');
      });

      it('accepts client_secret_basic', async () => {
        const basic = Buffer.from(`${org.clientId}:${org.clientSecret}`).toString('base64');
        const res = await token(
          { grant_type: 'client_credentials', scope: `org:${org.orgId}` },
          { authorization: `Basic ${basic}` },
        );
        expect(res.status).to.equal(200);
        expect(res.body.access_token).to.be.a('string');
      });

      it('ignores a stray Bearer header next to body credentials (only Basic is client authentication)', async () => {
        const res = await token(
          {
            grant_type: 'client_credentials',
            client_id: org.clientId,
            client_secret: org.clientSecret,
            scope: `org:${org.orgId}`,
          },
          { authorization: 'Bearer an-old-token' },
        );
        expect(res.status).to.equal(200);
        expect(res.body.access_token).to.be.a('string');
      });

      it('accepts Basic together with the same credentials in the body', async () => {
        const basic = Buffer.from(`${org.clientId}:${org.clientSecret}`).toString('base64');
        const res = await token(
          {
            grant_type: 'client_credentials',
            client_id: org.clientId,
            client_secret: org.clientSecret,
            scope: `org:${org.orgId}`,
          },
          { authorization: `Basic ${basic}` },
        );
        expect(res.status).to.equal(200);
      });

      const failures: [
        string,
        () => Record<string, string>,
        (() => Record<string, string>) | undefined,
        number,
        string,
      ][] = [
        [
          'a wrong secret',
          () => ({
            grant_type: 'client_credentials',
            client_id: org.clientId,
            client_secret: 'sys_wrong',
            scope: `org:${org.orgId}`,
          }),
          undefined,
          401,
          'invalid_client',
        ],
        [
          'an unknown client',
          () => ({
            grant_type: 'client_credentials',
            client_id: 'cli_nope',
            client_secret: org.clientSecret,
            scope: `org:${org.orgId}`,
          }),
          undefined,
          401,
          'invalid_client',
        ],
        [
          'a malformed Basic header',
          () => ({ grant_type: 'client_credentials', scope: `org:${org.orgId}` }),
          () => ({ authorization: 'Basic !!!' }),
          401,
          'invalid_client',
        ],
        [
          'another grant type',
          () => ({
            grant_type: 'password',
            client_id: org.clientId,
            client_secret: org.clientSecret,
            scope: `org:${org.orgId}`,
          }),
          undefined,
          400,
          'unsupported_grant_type',
        ],
        [
          'a missing grant type',
          () => ({ client_id: org.clientId, client_secret: org.clientSecret, scope: `org:${org.orgId}` }),
          undefined,
          400,
          'invalid_request',
        ],
        [
          'a missing scope',
          () => ({ grant_type: 'client_credentials', client_id: org.clientId, client_secret: org.clientSecret }),
          undefined,
          400,
          'invalid_request',
        ],
        [
          'a scope of another organisation',
          () => ({
            grant_type: 'client_credentials',
            client_id: org.clientId,
            client_secret: org.clientSecret,
            scope: `org:${other.orgId}`,
          }),
          undefined,
          400,
          'invalid_scope',
        ],
        [
          'Basic and body credentials that differ',
          () => ({
            grant_type: 'client_credentials',
            client_id: org.clientId,
            client_secret: 'sys_other',
            scope: `org:${org.orgId}`,
          }),
          () => ({ authorization: `Basic ${Buffer.from(`${org.clientId}:${org.clientSecret}`).toString('base64')}` }),
          400,
          'invalid_request',
        ],
        [
          'a Bearer header and no body credentials',
          () => ({ grant_type: 'client_credentials', scope: `org:${org.orgId}` }),
          () => ({ authorization: `Bearer ${org.token}` }),
          401,
          'invalid_client',
        ],
        [
          'no credentials at all',
          () => ({ grant_type: 'client_credentials', scope: `org:${org.orgId}` }),
          undefined,
          401,
          'invalid_client',
        ],
      ];
      for (const [what, fields, headers, status, error] of failures) {
        it(`rejects ${what} with ${status} ${error}`, async () => {
          const res = await token(fields(), headers?.());
          expect(res.status).to.equal(status);
          expect(res.body.error).to.equal(error);
          expect(res.body.error_description).to.be.a('string').and.not.equal('');
          expect(res.headers.get('cache-control')).to.equal('no-store');
          if (status === 401) expect(res.headers.get('www-authenticate')).to.match(/^Basic/);
          expect(res.text).to.not.contain(org.clientSecret);
        });
      }

      it('rejects a JSON body with 400 invalid_request (the endpoint takes form bodies, RFC 6749)', async () => {
        const res = await call(server.baseUrl, 'POST', '/oauth/token', { body: { grant_type: 'client_credentials' } });
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
      });

      it('rejects the tokens of a revoked credential within 5 s', async () => {
        const created = await call(server.baseUrl, 'POST', '/v1/credentials', {
          token: org.token,
          body: { label: 'short-lived' },
        });
        const t = await token({
          grant_type: 'client_credentials',
          client_id: created.body.clientId,
          client_secret: created.body.clientSecret,
          scope: `org:${org.orgId}`,
        });
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: t.body.access_token })).status).to.equal(
          200,
        );
        const revoked = await call(server.baseUrl, 'DELETE', `/v1/credentials/${created.body.id}`, {
          token: org.token,
        });
        expect(revoked.status).to.equal(200);
        const started = Date.now();
        let status = 200;
        while (status === 200 && Date.now() - started < 5000) {
          status = (await call(server.baseUrl, 'GET', '/v1/organization', { token: t.body.access_token })).status;
          if (status === 200) await new Promise((r) => setTimeout(r, 100));
        }
        expect(status).to.equal(401);
        const again = await token({
          grant_type: 'client_credentials',
          client_id: created.body.clientId,
          client_secret: created.body.clientSecret,
          scope: `org:${org.orgId}`,
        });
        expect(again.status).to.equal(401);
      });
    });

    describe('op:exchangeLegacyToken POST /auth/token', () => {
      const legacy = (headers: Record<string, string>) =>
        call(server.baseUrl, 'POST', '/auth/token', {
          headers: { 'content-type': 'application/json', ...headers },
          raw: '{}',
        });
      it('exchanges the client secret for a token that the gateway-side verifier accepts', async () => {
        const res = await legacy({ 'x-api-key': org.clientSecret, 'x-selected-org': org.orgId });
        expect(res.status).to.equal(200);
        expect(res.body.token).to.be.a('string');
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: res.body.token })).body.id).to.equal(
          org.orgId,
        );
      });
      it('rejects a wrong secret (401 invalid_client), another org (400 invalid_scope) and a missing header (400)', async () => {
        expect((await legacy({ 'x-api-key': 'sys_nope', 'x-selected-org': org.orgId })).body.error).to.equal(
          'invalid_client',
        );
        const wrongOrg = await legacy({ 'x-api-key': org.clientSecret, 'x-selected-org': other.orgId });
        expect([wrongOrg.status, wrongOrg.body.error]).to.deep.equal([400, 'invalid_scope']);
        const missing = await legacy({ 'x-selected-org': org.orgId });
        expect(missing.status).to.equal(400);
        expect(missing.body.error).to.equal('invalid_request');
      });
    });

    describe('op:getJwks and op:getAuthorizationServerMetadata', () => {
      it('publishes the public key that verifies issued tokens, and RFC 8414 metadata', async () => {
        const jwks = await call(server.baseUrl, 'GET', '/.well-known/jwks.json');
        expect(jwks.status).to.equal(200);
        const kid = decodeProtectedHeader(org.token).kid;
        const key = (jwks.body.keys as JWK[]).find((k) => k.kid === kid);
        expect(key).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
        expect(key).to.not.have.property('d');
        const meta = await call(server.baseUrl, 'GET', '/.well-known/oauth-authorization-server');
        expect(meta.status).to.equal(200);
        expect(meta.body).to.include({
          issuer: server.baseUrl,
          token_endpoint: `${server.baseUrl}/oauth/token`,
          jwks_uri: `${server.baseUrl}/.well-known/jwks.json`,
        });
      });
    });

    describe('Bearer verification in the pipeline (op:getOrganization GET /v1/organization)', () => {
      it('answers the token organisation', async () => {
        const res = await call(server.baseUrl, 'GET', '/v1/organization', { token: org.token });
        expect(res.status).to.equal(200);
        expect(res.body).to.include({ id: org.orgId, name: 'Org A' });
      });
      it('rejects a missing token, a malformed one, alg none, HS256 with the public key, a foreign signature and an org mismatch', async () => {
        expect((await call(server.baseUrl, 'GET', '/v1/organization')).status).to.equal(401);
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: 'not.a.jwt' })).body.error).to.equal(
          'invalid_token',
        );
        const claims = decodeJwt(org.token);
        const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
        const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: none })).status).to.equal(401);
        const jwks = (await call(server.baseUrl, 'GET', '/.well-known/jwks.json')).body.keys as JWK[];
        const hs = await new SignJWT(claims as Record<string, unknown>)
          .setProtectedHeader({ alg: 'HS256', kid: jwks[0]!.kid! })
          .sign(new TextEncoder().encode(JSON.stringify(jwks[0])));
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: hs })).status).to.equal(401);
        const { privateKey } = await generateKeyPair('ES256', { extractable: true });
        const forged = await new SignJWT(claims as Record<string, unknown>)
          .setProtectedHeader({ alg: 'ES256', kid: jwks[0]!.kid! })
          .sign(await importJWK(await exportJWK(privateKey), 'ES256'));
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: forged })).status).to.equal(401);
        const mismatch = await call(server.baseUrl, 'GET', '/v1/organization', {
          token: org.token,
          headers: { 'x-selected-org': other.orgId },
        });
        expect([mismatch.status, mismatch.body.error]).to.deep.equal([403, 'org_mismatch']);
      });
    });

    describe('credentials and API keys over the management API', () => {
      it('op:createCredential op:listCredentials op:getCredential op:revokeCredential — secret shown once, org-scoped', async () => {
        const created = await call(server.baseUrl, 'POST', '/v1/credentials', {
          token: org.token,
          body: { label: 'ci' },
        });
        expect(created.status).to.equal(201);
        expect(created.body.clientSecret).to.match(/^sys_/);
        const got = await call(server.baseUrl, 'GET', `/v1/credentials/${created.body.id}`, { token: org.token });
        expect(got.status).to.equal(200);
        expect(got.body).to.not.have.property('clientSecret');
        expect(got.text).to.not.contain(created.body.clientSecret);
        const list = await call(server.baseUrl, 'GET', '/v1/credentials?limit=200', { token: org.token });
        expect(list.body.items.map((c: { id: string }) => c.id)).to.include(created.body.id);
        const foreign = await call(server.baseUrl, 'GET', `/v1/credentials/${created.body.id}`, { token: other.token });
        expect(foreign.status).to.equal(404);
        const otherList = await call(server.baseUrl, 'GET', '/v1/credentials?limit=200', { token: other.token });
        expect(otherList.body.items.map((c: { id: string }) => c.id)).to.not.include(created.body.id);
        expect(
          (await call(server.baseUrl, 'DELETE', `/v1/credentials/${created.body.id}`, { token: other.token })).status,
        ).to.equal(404);
        const revoked = await call(server.baseUrl, 'DELETE', `/v1/credentials/${created.body.id}`, {
          token: org.token,
        });
        expect(revoked.body.revokedAt).to.be.a('string');
      });

      it('op:createApiKey op:listApiKeys op:getApiKey op:revokeApiKey — key shown once with a hint, org-scoped', async () => {
        const created = await call(server.baseUrl, 'POST', '/v1/api-keys', {
          token: org.token,
          body: { label: 'zapier' },
        });
        expect(created.status).to.equal(201);
        expect(created.body.apiKey).to.match(/^syk_/);
        expect(created.body.hint).to.equal(created.body.apiKey.slice(-4));
        const got = await call(server.baseUrl, 'GET', `/v1/api-keys/${created.body.id}`, { token: org.token });
        expect(got.body).to.not.have.property('apiKey');
        expect(
          (await call(server.baseUrl, 'GET', `/v1/api-keys/${created.body.id}`, { token: other.token })).status,
        ).to.equal(404);
        const list = await call(server.baseUrl, 'GET', '/v1/api-keys', { token: org.token });
        expect(list.body.items.map((k: { id: string }) => k.id)).to.include(created.body.id);
        const revoked = await call(server.baseUrl, 'DELETE', `/v1/api-keys/${created.body.id}`, { token: org.token });
        expect(revoked.body.revokedAt).to.be.a('string');
      });

      it('no lock-outs: the last active credential answers 409, even to a token issued for it; with another one it goes', async () => {
        const lone = await createTestOrg(server, 'One credential');
        const only = (await call(server.baseUrl, 'GET', '/v1/credentials', { token: lone.token })).body.items as {
          id: string;
        }[];
        expect(only).to.have.length(1);
        const refused = await call(server.baseUrl, 'DELETE', `/v1/credentials/${only[0]!.id}`, { token: lone.token });
        expect([refused.status, refused.body.error]).to.deep.equal([409, 'last_active_credential']);
        expect(refused.body.message).to.contain('Create another credential first');
        expect(
          (await call(server.baseUrl, 'GET', `/v1/credentials/${only[0]!.id}`, { token: lone.token })).body.revokedAt,
        ).to.equal(null);
        expect((await call(server.baseUrl, 'GET', '/v1/organization', { token: lone.token })).status).to.equal(200);
        const second = await call(server.baseUrl, 'POST', '/v1/credentials', {
          token: lone.token,
          body: { label: 'second' },
        });
        const revoked = await call(server.baseUrl, 'DELETE', `/v1/credentials/${only[0]!.id}`, { token: lone.token });
        expect([revoked.status, typeof revoked.body.revokedAt]).to.deep.equal([200, 'string']);
        const fresh = await token({
          grant_type: 'client_credentials',
          client_id: second.body.clientId,
          client_secret: second.body.clientSecret,
          scope: `org:${lone.orgId}`,
        });
        const again = await call(server.baseUrl, 'DELETE', `/v1/credentials/${only[0]!.id}`, {
          token: fresh.body.access_token,
        });
        expect(again.status, 'revoking a revoked credential is idempotent').to.equal(200);
      });

      it('no lock-outs: two concurrent revocations of the last two credentials leave one active', async () => {
        const pair = await createTestOrg(server, 'Two credentials');
        const extra = await call(server.baseUrl, 'POST', '/v1/credentials', {
          token: pair.token,
          body: { label: 'b' },
        });
        const ids = (
          (await call(server.baseUrl, 'GET', '/v1/credentials', { token: pair.token })).body.items as { id: string }[]
        ).map((c) => c.id);
        expect(ids).to.include(extra.body.id).and.have.length(2);
        const answers = await Promise.all(
          ids.map((id) => call(server.baseUrl, 'DELETE', `/v1/credentials/${id}`, { token: pair.token })),
        );
        expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 409]);
        // One of the two tokens' credentials is revoked now: read the store itself.
        const active = await server.app.services
          .db('credentials')
          .where({ org_id: pair.orgId })
          .whereNull('revoked_at');
        expect(active).to.have.length(1);
      });

      it('no lock-outs: the last active API key answers 409 while an enabled trigger needs it, and may go when none does', async () => {
        const keyed = await createTestOrg(server, 'One key');
        const keys = (await call(server.baseUrl, 'GET', '/v1/api-keys', { token: keyed.token })).body.items as {
          id: string;
        }[];
        expect(keys).to.have.length(1);
        const wf = await call(server.baseUrl, 'POST', '/v1/workflows', {
          token: keyed.token,
          body: { name: 'w', steps: [{ type: 'code', name: 's', code: 'return 1' }] },
        });
        const trg = await call(server.baseUrl, 'POST', '/v1/triggers', {
          token: keyed.token,
          body: { automationId: wf.body.automationId, kind: 'api' },
        });
        expect(trg.status).to.equal(201);
        const refused = await call(server.baseUrl, 'DELETE', `/v1/api-keys/${keys[0]!.id}`, { token: keyed.token });
        expect([refused.status, refused.body.error]).to.deep.equal([409, 'last_active_api_key']);
        expect(
          (
            await call(server.baseUrl, 'POST', `/ext/triggers/${trg.body.triggerId}`, {
              headers: { 'x-api-key': keyed.apiKey },
              body: {},
            })
          ).status,
          'the key still works',
        ).to.equal(200);
        const disabled = await call(server.baseUrl, 'PATCH', `/v1/triggers/${trg.body.triggerId}`, {
          token: keyed.token,
          headers: { 'if-match': `"${trg.body.version}"` },
          body: { enabled: false },
        });
        expect(disabled.status, disabled.text).to.equal(200);
        const revoked = await call(server.baseUrl, 'DELETE', `/v1/api-keys/${keys[0]!.id}`, { token: keyed.token });
        expect([revoked.status, typeof revoked.body.revokedAt]).to.deep.equal([200, 'string']);
      });

      it('rejects an invalid pagination limit and cursor with 400', async () => {
        expect((await call(server.baseUrl, 'GET', '/v1/credentials?limit=0', { token: org.token })).status).to.equal(
          400,
        );
        expect((await call(server.baseUrl, 'GET', '/v1/credentials?limit=201', { token: org.token })).status).to.equal(
          400,
        );
        const bad = await call(server.baseUrl, 'GET', '/v1/credentials?cursor=%%%', { token: org.token });
        expect([bad.status, bad.body.error]).to.deep.equal([400, 'invalid_cursor']);
      });
    });
  });
}
