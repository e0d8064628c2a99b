/**
 * `npx switchyard postman-env` on a real sqlite DATA_DIR, as a person at a terminal runs it:
 * the environment from bootstrap.json (baseUrl from PUBLIC_URL), the clear refusal when
 * bootstrap.json is gone (client secrets are stored only as hashes), and --new-credential.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { openStore } from '../../../src/storage/db.js';
import { authenticateClient, verifyApiKey, settleUsageWrites } from '../../../src/auth/index.js';
import { runCli } from '../../helpers/process.js';

describe('process: switchyard postman-env', function () {
  this.timeout(60_000);
  let dataDir: string;
  const cli = (...args: string[]) => runCli(args, { DATA_DIR: dataDir, PUBLIC_URL: 'http://127.0.0.1:18080' });
  const values = (env: { values: { key: string; value: string }[] }) =>
    Object.fromEntries(env.values.map((v) => [v.key, v.value]));
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-postman-env-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints the bootstrap values (baseUrl = PUBLIC_URL); --out writes 0600; first start wrote the same', async () => {
    expect((await cli('init')).code).to.equal(0);
    const bootstrap = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    const printed = await cli('postman-env');
    expect(printed.code, printed.stderr).to.equal(0);
    const env = values(JSON.parse(printed.stdout));
    expect(env).to.deep.equal({
      baseUrl: 'http://127.0.0.1:18080',
      orgId: bootstrap.orgId,
      clientId: bootstrap.clientId,
      clientSecret: bootstrap.clientSecret,
      apiKey: bootstrap.apiKey,
      demoAutomationId: bootstrap.demo.automationId,
      demoApiTriggerId: bootstrap.demo.apiTriggerId,
      demoWebhookTriggerId: bootstrap.demo.webhookTriggerId,
    });
    expect(values(JSON.parse(readFileSync(path.join(dataDir, 'postman_environment.json'), 'utf8')))).to.deep.equal(env);
    const out = path.join(dataDir, 'env.json');
    expect((await cli('postman-env', '--out', out)).code).to.equal(0);
    expect(statSync(out).mode & 0o777).to.equal(0o600);
    expect(values(JSON.parse(readFileSync(out, 'utf8')))).to.deep.equal(env);
  });

  it('without bootstrap.json: says what to do; --new-credential creates a working credential and key', async () => {
    renameSync(path.join(dataDir, 'bootstrap.json'), path.join(dataDir, 'bootstrap.saved.json'));
    const refused = await cli('postman-env');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('bootstrap.json not found').and.contain('--new-credential');

    const fresh = await cli('postman-env', '--new-credential');
    expect(fresh.code, fresh.stderr).to.equal(0);
    const env = values(JSON.parse(fresh.stdout));
    const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.saved.json'), 'utf8'));
    expect(env.clientId).to.not.equal(saved.clientId);
    expect(env.demoApiTriggerId, 'demo found by name').to.equal(saved.demo.apiTriggerId);
    const db = openStore({ dataDir });
    try {
      expect((await authenticateClient(db, env.clientId!, env.clientSecret!))?.orgId).to.equal(saved.orgId);
      expect((await verifyApiKey(db, env.apiKey!))?.orgId).to.equal(saved.orgId);
      await settleUsageWrites();
    } finally {
      await db.destroy();
    }
  });

  it('a revoked bootstrap credential is refused with the same advice', async () => {
    renameSync(path.join(dataDir, 'bootstrap.saved.json'), path.join(dataDir, 'bootstrap.json'));
    const bootstrap = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    const list = JSON.parse((await cli('credentials', 'list')).stdout) as { items: { id: string; clientId: string }[] };
    const id = list.items.find((c) => c.clientId === bootstrap.clientId)!.id;
    expect((await cli('credentials', 'revoke', id)).code).to.equal(0);
    const refused = await cli('postman-env');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('revoked').and.contain('--new-credential');
  });
});
