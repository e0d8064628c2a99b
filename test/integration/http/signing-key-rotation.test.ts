/**
 * POST /v1/signing-keys/rotate (openapi/management.yaml `rotateSigningKey`) on both stores: an
 * organisation of ADMIN_ORG_IDS rotates the installation's signing key; tokens of the retired
 * key keep working, new tokens carry the new `kid`, the JWKS lists both; any other
 * organisation gets 403 admin_required. The administrator organisation's id exists only once
 * the store does, so a second service is started over the first one's store with it set (its
 * tokens name that service as issuer, so they are taken from it).
 */
import { expect } from 'chai';
import { decodeProtectedHeader } from 'jose';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`HTTP: signing-key rotation (${kind})`, function () {
    this.timeout(60_000);
    let first: TestServer;
    let server: TestServer;
    let admin: TestOrg;
    let other: TestOrg;

    before(async () => {
      first = await startTestServer(kind);
      admin = await createTestOrg(first, 'Admin org');
      other = await createTestOrg(first, 'Other org');
      server = await startTestServer(kind, { ADMIN_ORG_IDS: ` ${admin.orgId} ,` }, first.store);
      admin.token = await token(admin);
      other.token = await token(other);
    });
    after(async () => {
      await server.close();
      await first.close();
    });
    afterEach(() => server.assertResponsesValid());

    async function token(org: TestOrg): Promise<string> {
      const res = await fetch(`${server.baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: org.clientId,
          client_secret: org.clientSecret,
          scope: `org:${org.orgId}`,
        }).toString(),
      });
      expect(res.status).to.equal(200);
      return ((await res.json()) as { access_token: string }).access_token;
    }

    it('op:rotateSigningKey makes a new signing key; tokens of the old one stay valid', async () => {
      const oldKid = decodeProtectedHeader(admin.token).kid;
      const res = await call(server.baseUrl, 'POST', '/v1/signing-keys/rotate', { token: admin.token });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.kid).to.be.a('string').and.not.equal(oldKid);
      expect(Date.parse(res.body.retiredKeysValidUntil)).to.be.greaterThan(Date.parse(res.body.rotatedAt) + 3600_000);
      const fresh = await token(admin);
      expect(decodeProtectedHeader(fresh).kid).to.equal(res.body.kid);
      const jwks = await call(server.baseUrl, 'GET', '/.well-known/jwks.json');
      expect(jwks.body.keys.map((k: any) => k.kid)).to.include.members([oldKid, res.body.kid]);
      for (const t of [admin.token, fresh]) {
        const org = await call(server.baseUrl, 'GET', '/v1/organization', { token: t });
        expect(org.status, org.text).to.equal(200);
      }
    });

    it('op:rotateSigningKey answers 403 admin_required to other organisations and 401 without a token', async () => {
      const res = await call(server.baseUrl, 'POST', '/v1/signing-keys/rotate', { token: other.token });
      expect(res.status, res.text).to.equal(403);
      expect(res.body.error).to.equal('admin_required');
      expect(res.body.message).to.match(/ADMIN_ORG_IDS/);
      const anonymous = await call(server.baseUrl, 'POST', '/v1/signing-keys/rotate');
      expect(anonymous.status).to.equal(401);
    });
  });
}
