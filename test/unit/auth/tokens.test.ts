import { createPublicKey } from 'node:crypto';
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  createCredential,
  createOrganization,
  createTokenService,
  revokeCredential,
  settleUsageWrites,
  type CredentialView,
  type TokenService,
} from '../../../src/auth/index.js';
import type { Config } from '../../../src/config/index.js';
import {
  activeSigningKey,
  b64url,
  craftToken,
  decodePart,
  expectInvalidToken,
  silentLog,
  testClock,
  testConfig,
} from './helpers.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`auth: runtime tokens (${kind})`, () => {
    let store: TestStore;
    let config: Config;
    let tokens: TokenService;
    let credential: CredentialView;
    let orgId: string;

    /** Valid claims for `credential`, as our issuer would write them. */
    const claims = (over: Record<string, unknown> = {}) => {
      const iat = Math.floor(Date.now() / 1000);
      return {
        iss: config.baseUrls.auth,
        sub: credential.clientId,
        aud: config.tokenAudience,
        org: orgId,
        cid: credential.id,
        iat,
        exp: iat + 600,
        jti: 'jti-test',
        ...over,
      };
    };

    beforeEach(async () => {
      store = await createTestStore(kind);
      config = testConfig(store.dataDir);
      tokens = await createTokenService({ db: store.db, config, log: silentLog });
      orgId = (await createOrganization(store.db, { name: 'Acme' })).id;
      credential = (await createCredential(store.db, orgId, { label: 'ci' })).credential;
    });
    afterEach(async () => {
      await tokens.close();
      await settleUsageWrites();
      await store.close();
    });

    it('issues an ES256 JWT with our claims and verifies it back to its context', async () => {
      const issued = await tokens.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      expect(issued.expiresIn).to.equal(3600);
      const header = decodePart(issued.accessToken, 0);
      const payload = decodePart(issued.accessToken, 1);
      const { keys } = await tokens.jwks();
      expect(header.alg).to.equal('ES256');
      expect(keys.map((k) => k.kid)).to.deep.equal([header.kid]);
      expect(payload.iss).to.equal('http://127.0.0.1:8080');
      expect(payload.sub).to.equal(credential.clientId);
      expect(payload.aud).to.equal('switchyard');
      expect(payload.org).to.equal(orgId);
      expect(payload.cid).to.equal(credential.id);
      expect(payload.exp).to.equal((payload.iat as number) + 3600);
      expect(payload.iat).to.be.closeTo(Date.now() / 1000, 5);
      expect(payload.jti).to.be.a('string').with.length.greaterThan(15);
      const ctx = await tokens.verify(issued.accessToken);
      expect(ctx).to.deep.equal({
        orgId,
        credentialId: credential.id,
        clientId: credential.clientId,
        tokenId: payload.jti,
        expiresAt: new Date((payload.exp as number) * 1000).toISOString(),
      });
      const again = await tokens.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      expect(decodePart(again.accessToken, 1).jti, 'jti is random').to.not.equal(payload.jti);
    });

    it('accepts a token crafted with the real key and valid claims (the negative tests below are meaningful)', async () => {
      const { kid, key } = await activeSigningKey(store.db, config);
      const ctx = await tokens.verify(await craftToken(key, { kid }, claims()));
      expect(ctx.orgId).to.equal(orgId);
    });

    it('rejects garbage and a tampered signature or payload', async () => {
      const { accessToken } = await tokens.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      const [h, p, s] = accessToken.split('.') as [string, string, string];
      for (const bad of ['', 'garbage', 'a.b.c', `${h}.${p}`, `${accessToken}.x`, 'x'.repeat(10_000)]) {
        await expectInvalidToken(tokens.verify(bad), `garbage ${bad.slice(0, 20)}`);
      }
      const mid = Math.floor(s.length / 2);
      const flipped = `${s.slice(0, mid)}${s[mid] === 'A' ? 'B' : 'A'}${s.slice(mid + 1)}`;
      await expectInvalidToken(tokens.verify(`${h}.${p}.${flipped}`), 'tampered signature');
      const other = await createOrganization(store.db, { name: 'Other' });
      const forged = b64url({ ...decodePart(accessToken, 1), org: other.id });
      await expectInvalidToken(tokens.verify(`${h}.${forged}.${s}`), 'payload swapped, signature kept');
    });

    it('rejects alg none and HS256 keyed with our public key (algorithm confusion)', async () => {
      const { kid } = await activeSigningKey(store.db, config);
      const none = `${b64url({ alg: 'none', typ: 'JWT', kid })}.${b64url(claims())}.`;
      await expectInvalidToken(tokens.verify(none), 'alg none');
      await expectInvalidToken(
        tokens.verify(`${b64url({ alg: 'none', typ: 'JWT', kid })}.${b64url(claims())}`),
        'alg none, two parts',
      );
      const jwk = (await tokens.jwks()).keys[0]!;
      const pem = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: 'jwk' }).export({
        type: 'spki',
        format: 'pem',
      });
      const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
      const secrets: [string, Uint8Array][] = [
        ['JWK JSON', new TextEncoder().encode(JSON.stringify(jwk))],
        ['SPKI PEM', new TextEncoder().encode(String(pem))],
        ['raw point', new Uint8Array(point)],
      ];
      for (const [name, secret] of secrets) {
        const hs = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid }).sign(secret);
        await expectInvalidToken(tokens.verify(hs), `HS256 with ${name}`);
      }
    });

    it('rejects a wrong audience, a wrong issuer, missing or mistyped claims, and an unknown or missing kid', async () => {
      const { kid, key } = await activeSigningKey(store.db, config);
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ aud: 'someone-else' }))),
        'wrong aud',
      );
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ iss: 'https://evil.example' }))),
        'wrong iss',
      );
      for (const missing of ['org', 'cid', 'sub', 'jti', 'exp', 'iat', 'iss', 'aud']) {
        const c: Record<string, unknown> = claims();
        delete c[missing];
        await expectInvalidToken(tokens.verify(await craftToken(key, { kid }, c)), `missing ${missing}`);
      }
      await expectInvalidToken(tokens.verify(await craftToken(key, { kid }, claims({ org: 42 }))), 'org not a string');
      await expectInvalidToken(tokens.verify(await craftToken(key, { kid }, claims({ cid: '' }))), 'empty cid');
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid: 'sk_00000000000000000000000000000000' }, claims())),
        'unknown kid',
      );
      await expectInvalidToken(tokens.verify(await craftToken(key, {}, claims())), 'no kid');
    });

    it("rejects a token whose org claim is not its credential's organisation", async () => {
      const { kid, key } = await activeSigningKey(store.db, config);
      const other = await createOrganization(store.db, { name: 'Other' });
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ org: other.id }))),
        'org of another tenant',
      );
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ cid: 'cred_00000000000000000000000000000000' }))),
        'unknown credential',
      );
    });

    it('rejects expired tokens with at most 5 s of clock tolerance', async () => {
      const { kid, key } = await activeSigningKey(store.db, config);
      const now = Math.floor(Date.now() / 1000);
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ iat: now - 3700, exp: now - 10 }))),
        'expired 10 s ago',
      );
      const ctx = await tokens.verify(await craftToken(key, { kid }, claims({ iat: now - 3600, exp: now - 2 })));
      expect(ctx.orgId, 'expired 2 s ago is within the tolerance').to.equal(orgId);
      await expectInvalidToken(
        tokens.verify(await craftToken(key, { kid }, claims({ iat: now + 60, exp: now + 3660 }))),
        'issued in the future',
      );
    });

    it('expires issued tokens after tokenTtlSeconds on the service clock', async () => {
      const clock = testClock();
      const timed = await createTokenService({ db: store.db, config, log: silentLog, now: clock.now });
      const { accessToken } = await timed.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      clock.advance((3600 + 4) * 1000);
      expect((await timed.verify(accessToken)).orgId).to.equal(orgId);
      clock.advance(3 * 1000);
      await expectInvalidToken(timed.verify(accessToken), 'past exp + 5 s');
      await timed.close();
    });

    it("rejects a revoked credential's tokens at once in-process and within revocationCacheMs elsewhere", async function () {
      this.timeout(15_000);
      expect(config.revocationCacheMs).to.equal(2000);
      const elsewhere = await createTokenService({ db: store.db, config, log: silentLog });
      const { accessToken } = await tokens.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      expect((await tokens.verify(accessToken)).credentialId).to.equal(credential.id);
      expect((await elsewhere.verify(accessToken)).credentialId).to.equal(credential.id);
      const revokedAt = Date.now();
      const view = await tokens.revokeCredential(orgId, credential.id, { force: true });
      expect(view?.revokedAt).to.be.a('string');
      await expectInvalidToken(tokens.verify(accessToken), 'revoked in this process');
      let rejectedAfter = -1;
      while (Date.now() - revokedAt < 5000) {
        try {
          await elsewhere.verify(accessToken);
        } catch {
          rejectedAfter = Date.now() - revokedAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(rejectedAfter, 'rejected by the other process').to.be.at.least(0);
      expect(rejectedAfter).to.be.at.most(config.revocationCacheMs + 500);
      await expectInvalidToken(elsewhere.verify(accessToken), 'stays rejected');
      await elsewhere.close();
    });

    it('picks up a revocation made directly in the store after the cache TTL', async () => {
      const quick = testConfig(store.dataDir, { REVOCATION_CACHE_MS: '200' });
      const svc = await createTokenService({
        db: store.db,
        config: { ...quick, secretKey: config.secretKey },
        log: silentLog,
      });
      const { accessToken } = await svc.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      await svc.verify(accessToken);
      await revokeCredential(store.db, orgId, credential.id, { force: true });
      await new Promise((r) => setTimeout(r, 250));
      await expectInvalidToken(svc.verify(accessToken), 'after the TTL');
      await svc.close();
    });

    it('verifies without a store query per request, and forged kids reload the key set at most once a second', async () => {
      const { accessToken } = await tokens.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
      await tokens.verify(accessToken);
      const queries: string[] = [];
      const onQuery = (q: { sql: string }) => queries.push(q.sql);
      store.db.on('query', onQuery);
      try {
        for (let i = 0; i < 50; i++) await tokens.verify(accessToken);
        expect(queries, 'warm verifications').to.deep.equal([]);
        const { key } = await activeSigningKey(store.db, config);
        queries.length = 0;
        for (let i = 0; i < 20; i++) {
          const kid = `sk_${i.toString(16).padStart(32, '0')}`;
          await expectInvalidToken(tokens.verify(await craftToken(key, { kid }, claims())), `forged kid ${i}`);
        }
        expect(queries.filter((q) => q.includes('signing_keys')).length, 'key set reloads').to.be.at.most(1);
      } finally {
        store.db.removeListener('query', onQuery);
      }
    });
  });
}
