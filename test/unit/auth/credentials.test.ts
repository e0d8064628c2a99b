import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  authenticateClient,
  authenticateSecret,
  createCredential,
  createOrganization,
  getCredential,
  getOrganization,
  listCredentials,
  revokeCredential,
  settleUsageWrites,
} from '../../../src/auth/index.js';
import { AppError } from '../../../src/errors/index.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`auth: organisations and credentials (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
    });
    afterEach(async () => {
      await settleUsageWrites();
      await store.close();
    });

    it('creates and reads an organisation', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      expect(org.id).to.match(/^org_[0-9a-f]{32}$/);
      expect(org.name).to.equal('Acme');
      expect(Date.parse(org.createdAt)).to.be.closeTo(Date.now(), 5000);
      expect(await getOrganization(store.db, org.id)).to.deep.equal(org);
      expect(await getOrganization(store.db, 'org_missing')).to.equal(null);
    });

    it('creates a credential with a client id and a once-shown secret', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { credential, clientSecret } = await createCredential(store.db, org.id, { label: 'ci' });
      expect(credential.id).to.match(/^cred_[0-9a-f]{32}$/);
      expect(credential.clientId).to.match(/^cli_[0-9a-f]{32}$/);
      expect(credential.orgId).to.equal(org.id);
      expect(credential.label).to.equal('ci');
      expect(credential.revokedAt).to.equal(null);
      expect(clientSecret).to.match(/^sys_[0-9A-Za-z]{40}$/);
      expect(Object.keys(credential).sort()).to.deep.equal([
        'clientId',
        'createdAt',
        'id',
        'label',
        'orgId',
        'revokedAt',
      ]);
      expect(await getCredential(store.db, org.id, credential.id)).to.deep.equal(credential);
    });

    it('paginates with an opaque cursor, in creation order, without gaps or repeats', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const created: string[] = [];
      for (let i = 0; i < 5; i++)
        created.push((await createCredential(store.db, org.id, { label: `c${i}` })).credential.id);
      const p1 = await listCredentials(store.db, org.id, { limit: 2 });
      expect(p1.items.map((c) => c.id)).to.deep.equal(created.slice(0, 2));
      expect(p1.nextCursor).to.be.a('string');
      expect(p1.nextCursor).to.not.include('cred_');
      const p2 = await listCredentials(store.db, org.id, { limit: 2, cursor: p1.nextCursor! });
      expect(p2.items.map((c) => c.id)).to.deep.equal(created.slice(2, 4));
      const p3 = await listCredentials(store.db, org.id, { limit: 2, cursor: p2.nextCursor! });
      expect(p3.items.map((c) => c.id)).to.deep.equal(created.slice(4));
      expect(p3.nextCursor).to.equal(null);
      const all = await listCredentials(store.db, org.id, {});
      expect(all.items).to.have.length(5);
      expect(all.nextCursor).to.equal(null);
      // An exact multiple of the limit must not promise a page that is empty.
      const exact = await listCredentials(store.db, org.id, { limit: 5 });
      expect(exact.nextCursor).to.equal(null);
    });

    it('rejects a malformed cursor or a cursor of another resource kind', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      for (const cursor of [
        '%%%',
        'bm90LWFuLWlk',
        Buffer.from('key_0190c3b4a1b27c3d8e9f0a1b2c3d4e5f').toString('base64url'),
      ]) {
        let caught: unknown;
        try {
          await listCredentials(store.db, org.id, { cursor });
        } catch (err) {
          caught = err;
        }
        expect(caught, cursor).to.be.instanceOf(AppError);
        expect((caught as AppError).key).to.equal('ERR_INVALID_CURSOR');
      }
    });

    it('never shows one organisation the credentials of another', async () => {
      const a = await createOrganization(store.db, { name: 'A' });
      const b = await createOrganization(store.db, { name: 'B' });
      const ca = await createCredential(store.db, a.id, { label: 'a' });
      const cb = await createCredential(store.db, b.id, { label: 'b' });
      expect((await listCredentials(store.db, a.id, {})).items.map((c) => c.id)).to.deep.equal([ca.credential.id]);
      expect((await listCredentials(store.db, b.id, {})).items.map((c) => c.id)).to.deep.equal([cb.credential.id]);
      expect(await getCredential(store.db, a.id, cb.credential.id)).to.equal(null);
      expect(await revokeCredential(store.db, a.id, cb.credential.id)).to.equal(null);
      expect((await getCredential(store.db, b.id, cb.credential.id))?.revokedAt).to.equal(null);
      // A cursor taken from org B's list does not leak B's rows into A's list.
      const fromB = await listCredentials(store.db, b.id, { limit: 1 });
      expect(fromB.nextCursor).to.equal(null);
    });

    it('revokes idempotently, keeping the first revocation time', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { credential } = await createCredential(store.db, org.id, { label: 'x' });
      // The organisation's only credential: --force, as the CLI passes it (the API answers 409).
      const first = await revokeCredential(store.db, org.id, credential.id, { force: true });
      expect(first?.revokedAt).to.be.a('string');
      await new Promise((r) => setTimeout(r, 5));
      const second = await revokeCredential(store.db, org.id, credential.id, { force: true });
      expect(second?.revokedAt).to.equal(first?.revokedAt);
      expect(await revokeCredential(store.db, org.id, 'cred_00000000000000000000000000000000')).to.equal(null);
    });

    it('authenticates a client by id and secret: right, wrong, revoked, unknown', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const one = await createCredential(store.db, org.id, { label: 'one' });
      const two = await createCredential(store.db, org.id, { label: 'two' });
      const ok = await authenticateClient(store.db, one.credential.clientId, one.clientSecret);
      expect(ok?.id).to.equal(one.credential.id);
      expect(ok?.orgId).to.equal(org.id);
      expect(
        await authenticateClient(store.db, one.credential.clientId, two.clientSecret),
        'secret of another client',
      ).to.equal(null);
      expect(
        await authenticateClient(store.db, one.credential.clientId, `${one.clientSecret}x`),
        'wrong secret',
      ).to.equal(null);
      expect(
        await authenticateClient(store.db, 'cli_00000000000000000000000000000000', one.clientSecret),
        'unknown client',
      ).to.equal(null);
      expect(await authenticateClient(store.db, one.credential.clientId, ''), 'empty secret').to.equal(null);
      await revokeCredential(store.db, org.id, one.credential.id);
      expect(await authenticateClient(store.db, one.credential.clientId, one.clientSecret), 'revoked').to.equal(null);
      expect((await authenticateClient(store.db, two.credential.clientId, two.clientSecret))?.id).to.equal(
        two.credential.id,
      );
    });

    it('refuses to revoke the last active credential without force (no lock-outs)', async () => {
      const org = await createOrganization(store.db, { name: 'Lone' });
      const { credential } = await createCredential(store.db, org.id, { label: 'only' });
      let code: string | undefined;
      try {
        await revokeCredential(store.db, org.id, credential.id);
      } catch (err) {
        code = (err as { code?: string }).code;
      }
      expect(code).to.equal('last_active_credential');
      expect((await getCredential(store.db, org.id, credential.id))?.revokedAt).to.equal(null);
    });

    it('authenticates by secret alone for the legacy exchange', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { credential, clientSecret } = await createCredential(store.db, org.id, { label: 'legacy' });
      expect((await authenticateSecret(store.db, clientSecret))?.id).to.equal(credential.id);
      expect(await authenticateSecret(store.db, clientSecret.slice(0, -1))).to.equal(null);
      expect(await authenticateSecret(store.db, credential.clientId)).to.equal(null);
      await revokeCredential(store.db, org.id, credential.id, { force: true });
      expect(await authenticateSecret(store.db, clientSecret)).to.equal(null);
    });

    it('records the last use after a successful authentication, off the request path', async () => {
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { credential, clientSecret } = await createCredential(store.db, org.id, { label: 'x' });
      const before = (await store.db('credentials').where({ id: credential.id }).first()) as {
        last_used_at: string | null;
      };
      expect(before.last_used_at).to.equal(null);
      await authenticateClient(store.db, credential.clientId, clientSecret);
      await settleUsageWrites();
      const after = (await store.db('credentials').where({ id: credential.id }).first()) as {
        last_used_at: string | null;
      };
      expect(Date.parse(after.last_used_at ?? '')).to.be.closeTo(Date.now(), 5000);
    });
  });
}
