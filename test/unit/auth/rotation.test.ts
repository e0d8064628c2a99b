import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  createCredential,
  createOrganization,
  createTokenService,
  settleUsageWrites,
  type CredentialView,
  type TokenService,
} from '../../../src/auth/index.js';
import type { Config } from '../../../src/config/index.js';
import { craftToken, decodePart, expectInvalidToken, silentLog, testClock, testConfig } from './helpers.js';
import { importJWK, type CryptoKey } from 'jose';
import { decrypt } from '../../../src/auth/index.js';

const kinds = await storeKinds();
const DAY = 86_400_000;

interface KeyRow {
  kid: string;
  created_at: string;
  retired_at: string | null;
  expires_at: string | null;
  private_jwk_enc: string;
}

for (const kind of kinds) {
  describe(`auth: signing keys and rotation (${kind})`, () => {
    let store: TestStore;
    let config: Config;
    let credential: CredentialView;
    let orgId: string;
    const services: TokenService[] = [];
    const start = async (now?: () => number): Promise<TokenService> => {
      const svc = await createTokenService({ db: store.db, config, log: silentLog, ...(now ? { now } : {}) });
      services.push(svc);
      return svc;
    };
    const issue = (svc: TokenService) =>
      svc.issue({ orgId, credentialId: credential.id, clientId: credential.clientId });
    const keyRows = async (): Promise<KeyRow[]> =>
      (await store.db('signing_keys').orderBy('created_at', 'asc')) as KeyRow[];
    const privateKey = async (row: KeyRow): Promise<CryptoKey> =>
      (await importJWK(
        JSON.parse(decrypt(config.secretKey, row.private_jwk_enc)) as Record<string, string>,
        'ES256',
      )) as CryptoKey;

    beforeEach(async () => {
      store = await createTestStore(kind);
      config = testConfig(store.dataDir);
      orgId = (await createOrganization(store.db, { name: 'Acme' })).id;
      credential = (await createCredential(store.db, orgId, { label: 'ci' })).credential;
    });
    afterEach(async () => {
      for (const s of services.splice(0)) await s.close();
      await settleUsageWrites();
      await store.close();
    });

    it('creates exactly one key on an empty store and reuses it on the next start', async () => {
      const a = await start();
      expect(await keyRows()).to.have.length(1);
      const b = await start();
      const rows = await keyRows();
      expect(rows).to.have.length(1);
      expect(rows[0]!.retired_at).to.equal(null);
      expect((await a.jwks()).keys.map((k) => k.kid)).to.deep.equal([rows[0]!.kid]);
      expect((await b.jwks()).keys.map((k) => k.kid)).to.deep.equal([rows[0]!.kid]);
      const jwk = (await a.jwks()).keys[0]!;
      expect(jwk).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(Object.keys(jwk).sort()).to.deep.equal(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    });

    it('keeps tokens of the retired key verifiable and lists both keys after a rotation', async () => {
      const svc = await start();
      const before = await issue(svc);
      const oldKid = decodePart(before.accessToken, 0).kid;
      const { kid: newKid } = await svc.rotate();
      expect(newKid).to.not.equal(oldKid);
      const after = await issue(svc);
      expect(decodePart(after.accessToken, 0).kid).to.equal(newKid);
      expect((await svc.verify(before.accessToken)).credentialId).to.equal(credential.id);
      expect((await svc.verify(after.accessToken)).credentialId).to.equal(credential.id);
      expect((await svc.jwks()).keys.map((k) => k.kid).sort()).to.deep.equal([oldKid, newKid].sort());
      const old = (await keyRows()).find((r) => r.kid === oldKid)!;
      expect(old.retired_at).to.be.a('string');
      // Retired keys live for the token lifetime plus 5 minutes of grace.
      expect(Date.parse(old.expires_at!) - Date.parse(old.retired_at!)).to.equal((3600 + 300) * 1000);
    });

    it('drops a retired key from the JWKS and from verification once it expires', async () => {
      const clock = testClock();
      const svc = await start(clock.now);
      const oldRow = (await keyRows())[0]!;
      const oldKey = await privateKey(oldRow);
      await svc.rotate();
      // A long-lived token signed by the old key: only the key's expiry can make it fail.
      const nowS = Math.floor(clock.now() / 1000);
      const longLived = await craftToken(
        oldKey,
        { kid: oldRow.kid },
        {
          iss: config.baseUrls.auth,
          aud: config.tokenAudience,
          sub: credential.clientId,
          org: orgId,
          cid: credential.id,
          jti: 'long',
          iat: nowS,
          exp: nowS + 10 * 3600,
        },
      );
      clock.advance((3600 + 300 - 10) * 1000);
      expect((await svc.verify(longLived)).orgId, 'still inside the grace window').to.equal(orgId);
      expect((await svc.jwks()).keys).to.have.length(2);
      clock.advance(20 * 1000);
      await expectInvalidToken(svc.verify(longLived), 'retired key expired');
      expect((await svc.jwks()).keys.map((k) => k.kid)).to.not.include(oldRow.kid);
      expect((await svc.jwks()).keys).to.have.length(1);
      // A fresh process sees the same: the store filters expired keys too.
      const fresh = await start(clock.now);
      expect((await fresh.jwks()).keys.map((k) => k.kid)).to.not.include(oldRow.kid);
      await expectInvalidToken(fresh.verify(longLived), 'retired key expired, fresh process');
    });

    it('rotates on start when the active key is older than signingKeyMaxAgeDays', async () => {
      const first = await start();
      const token = await issue(first);
      const [oldRow] = await keyRows();
      await store
        .db('signing_keys')
        .where({ kid: oldRow!.kid })
        .update({ created_at: new Date(Date.now() - 31 * DAY).toISOString() });
      const second = await start();
      const rows = await keyRows();
      expect(rows).to.have.length(2);
      const active = rows.filter((r) => r.retired_at === null);
      expect(active).to.have.length(1);
      expect(active[0]!.kid).to.not.equal(oldRow!.kid);
      expect(decodePart((await issue(second)).accessToken, 0).kid).to.equal(active[0]!.kid);
      expect((await second.verify(token.accessToken)).orgId, 'tokens of the old key still verify').to.equal(orgId);
    });

    it('rotates by age while running, once, even when two processes notice together', async () => {
      const clock = testClock();
      const a = await start(clock.now);
      const b = await start(clock.now);
      const oldKid = (await keyRows())[0]!.kid;
      clock.advance(31 * DAY);
      const [ta, tb] = await Promise.all([issue(a), issue(b)]);
      const active = (await keyRows()).filter((r) => r.retired_at === null);
      expect(active, 'one active key after concurrent age rotation').to.have.length(1);
      expect(active[0]!.kid).to.not.equal(oldKid);
      expect(decodePart(ta.accessToken, 0).kid).to.equal(active[0]!.kid);
      expect(decodePart(tb.accessToken, 0).kid).to.equal(active[0]!.kid);
    });

    it('follows a rotation made by another process through the unknown-kid reload', async () => {
      const other = await start();
      const self = await start();
      const { kid } = await other.rotate();
      const token = await issue(other);
      expect(decodePart(token.accessToken, 0).kid).to.equal(kid);
      expect((await self.verify(token.accessToken)).orgId).to.equal(orgId);
    });
  });
}
