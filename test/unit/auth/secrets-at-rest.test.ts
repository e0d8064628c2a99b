import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  createApiKey,
  createCredential,
  createOrganization,
  createTokenService,
  decrypt,
  hashSecret,
  settleUsageWrites,
} from '../../../src/auth/index.js';
import { silentLog, testConfig } from './helpers.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`auth: secrets at rest (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
    });
    afterEach(async () => {
      await settleUsageWrites();
      await store.close();
    });

    it('stores client secrets, API keys and private signing keys only hashed or encrypted', async () => {
      const config = testConfig(store.dataDir);
      const tokens = await createTokenService({ db: store.db, config, log: silentLog });
      const org = await createOrganization(store.db, { name: 'Acme' });
      const { credential, clientSecret } = await createCredential(store.db, org.id, { label: 'c' });
      const { apiKey, secret } = await createApiKey(store.db, org.id, { label: 'k' });
      await tokens.rotate();

      const dump = JSON.stringify(
        await Promise.all(
          ['organizations', 'credentials', 'api_keys', 'signing_keys'].map((t) => store.db(t).select()),
        ),
      );
      // Booleans, not the strings, so a failure never prints a secret.
      expect(dump.includes(clientSecret), 'client secret in the store').to.equal(false);
      expect(dump.includes(clientSecret.slice(4)), 'client secret body in the store').to.equal(false);
      expect(dump.includes(secret), 'API key in the store').to.equal(false);
      expect(dump.includes(secret.slice(4, -4)), 'API key body in the store').to.equal(false);

      const cred = (await store.db('credentials').where({ id: credential.id }).first()) as { secret_hash: string };
      expect(cred.secret_hash === hashSecret(clientSecret), 'credential row holds the SHA-256').to.equal(true);
      const key = (await store.db('api_keys').where({ id: apiKey.id }).first()) as {
        secret_hash: string;
        hint: string;
      };
      expect(key.secret_hash === hashSecret(secret), 'API key row holds the SHA-256').to.equal(true);
      expect(key.hint).to.equal(secret.slice(-4));

      const rows = (await store.db('signing_keys').select()) as { public_jwk: string; private_jwk_enc: string }[];
      expect(rows).to.have.length(2);
      for (const row of rows) {
        const priv = JSON.parse(decrypt(config.secretKey, row.private_jwk_enc)) as { d: string };
        expect(priv.d, 'private scalar present after decryption').to.be.a('string').with.length.greaterThan(20);
        expect(dump.includes(priv.d), 'private scalar in plain text').to.equal(false);
        expect(row.public_jwk.includes('"d"'), 'public JWK carries no private part').to.equal(false);
        expect(row.private_jwk_enc.startsWith('v1.'), 'sealed with AES-256-GCM').to.equal(true);
      }
      await tokens.close();
    });
  });
}
