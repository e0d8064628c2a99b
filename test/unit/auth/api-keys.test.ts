import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  createApiKey,
  createOrganization,
  getApiKey,
  listApiKeys,
  revokeApiKey as revokeWithGuard,
  settleUsageWrites,
  verifyApiKey,
  ApiKeyVerifier,
} from '../../../src/auth/index.js';
import { hasEnabledTriggers } from '../../../src/triggers/index.js';
import type { Knex } from '../../../src/storage/db.js';

/** As the HTTP handler and the CLI revoke: the triggers context answers whether a key is still needed. */
const revokeApiKey = (db: Knex, orgId: string, id: string) =>
  revokeWithGuard(db, orgId, id, { triggersNeedKey: hasEnabledTriggers });

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`auth: trigger API keys (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
    });
    afterEach(async () => {
      await settleUsageWrites();
      await store.close();
    });

    it('creates a key shown once, with a hint of its last 4 characters', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { apiKey, secret } = await createApiKey(store.db, org.id, { label: 'prod trigger' });
      expect(apiKey.id).to.match(/^key_[0-9a-f]{32}$/);
      expect(secret).to.match(/^syk_[0-9A-Za-z]{40}$/);
      expect(apiKey.hint).to.equal(secret.slice(-4));
      expect(apiKey.hint).to.have.length(4);
      expect(apiKey.label).to.equal('prod trigger');
      expect(apiKey.revokedAt).to.equal(null);
      expect(Object.keys(apiKey).sort()).to.deep.equal(['createdAt', 'hint', 'id', 'label', 'revokedAt']);
      expect(await getApiKey(store.db, org.id, apiKey.id)).to.deep.equal(apiKey);
    });

    it('verifies a key to its organisation; wrong, empty and revoked keys fail', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { apiKey, secret } = await createApiKey(store.db, org.id, { label: 'k' });
      expect(await verifyApiKey(store.db, secret)).to.deep.equal({ orgId: org.id, keyId: apiKey.id });
      expect(
        await verifyApiKey(store.db, `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`),
        'wrong',
      ).to.equal(null);
      expect(await verifyApiKey(store.db, ''), 'empty').to.equal(null);
      expect(await verifyApiKey(store.db, 'x'.repeat(10_000)), 'oversized').to.equal(null);
      const revoked = await revokeApiKey(store.db, org.id, apiKey.id);
      expect(revoked?.revokedAt).to.be.a('string');
      expect(await verifyApiKey(store.db, secret), 'revoked').to.equal(null);
      const again = await revokeApiKey(store.db, org.id, apiKey.id);
      expect(again?.revokedAt, 'idempotent').to.equal(revoked?.revokedAt);
    });

    it('a revocation through revokeApiKey (as the CLI or a handler makes it) is seen at once by the cached verifier', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { apiKey, secret } = await createApiKey(store.db, org.id, { label: 'k' });
      const verifier = new ApiKeyVerifier(store.db, 60_000);
      expect(await verifier.verify(secret)).to.deep.equal({ orgId: org.id, keyId: apiKey.id });
      await revokeApiKey(store.db, org.id, apiKey.id);
      expect(await verifier.verify(secret), 'not served from the 60 s memo').to.equal(null);
    });

    it('paginates and isolates organisations', async () => {
      const a = await createOrganization(store.db, { name: 'A' });
      const b = await createOrganization(store.db, { name: 'B' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await createApiKey(store.db, a.id, { label: `a${i}` })).apiKey.id);
      const kb = await createApiKey(store.db, b.id, { label: 'b' });
      const p1 = await listApiKeys(store.db, a.id, { limit: 2 });
      expect(p1.items.map((k) => k.id)).to.deep.equal(ids.slice(0, 2));
      const p2 = await listApiKeys(store.db, a.id, { limit: 2, cursor: p1.nextCursor ?? undefined });
      expect(p2.items.map((k) => k.id)).to.deep.equal(ids.slice(2));
      expect(p2.nextCursor).to.equal(null);
      expect((await listApiKeys(store.db, b.id, {})).items.map((k) => k.id)).to.deep.equal([kb.apiKey.id]);
      expect(await getApiKey(store.db, a.id, kb.apiKey.id)).to.equal(null);
      expect(await revokeApiKey(store.db, a.id, kb.apiKey.id)).to.equal(null);
      expect(await verifyApiKey(store.db, kb.secret), 'a foreign revoke attempt changed nothing').to.deep.equal({
        orgId: b.id,
        keyId: kb.apiKey.id,
      });
    });

    it('records the last use at most once a minute, after the answer', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { apiKey, secret } = await createApiKey(store.db, org.id, { label: 'k' });
      const lastUsed = async () =>
        ((await store.db('api_keys').where({ id: apiKey.id }).first()) as { last_used_at: string | null }).last_used_at;
      await verifyApiKey(store.db, secret);
      await settleUsageWrites();
      const first = await lastUsed();
      expect(Date.parse(first ?? '')).to.be.closeTo(Date.now(), 5000);
      await new Promise((r) => setTimeout(r, 10));
      for (let i = 0; i < 5; i++) await verifyApiKey(store.db, secret);
      await settleUsageWrites();
      expect(await lastUsed(), 'throttled: unchanged within the minute').to.equal(first);
    });
  });
}
