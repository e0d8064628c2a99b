/** `npx switchyard …` against a real store, as a person at a terminal would use it. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { decodeJwt } from 'jose';
import { demoWorkflow } from '../../../src/bootstrap/demo-workflow.js';
import { runBin, runCli } from '../../helpers/process.js';

describe('process: the switchyard CLI', function () {
  this.timeout(60_000);
  let dataDir: string;
  const cli = (...args: string[]) => runCli(args, { DATA_DIR: dataDir });
  const json = (s: string) => JSON.parse(s);
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('init seeds once; credentials, keys, token, workflow deploy and trigger create work; errors are clear', async () => {
    // The first call goes through the real entry (bin/switchyard.js, dist/cli.js); the rest through the test build of the same source.
    const init = await runBin(['init'], { DATA_DIR: dataDir });
    expect(init.code, init.stderr).to.equal(0);
    expect(init.stdout).to.contain('Switchyard is ready');
    expect(json((await cli('init')).stdout).message).to.contain('nothing to do');

    const cred = json((await cli('credentials', 'create', '--label', 'ci')).stdout);
    expect(cred.clientSecret).to.match(/^sys_/);
    const tok = json((await cli('token', '--client-id', cred.clientId, '--client-secret', cred.clientSecret)).stdout);
    expect(tok.token_type).to.equal('Bearer');
    expect(decodeJwt(tok.access_token).org).to.equal(cred.orgId);
    const bad = await cli('token', '--client-id', cred.clientId, '--client-secret', 'sys_wrong');
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('invalid_client');

    const key = json((await cli('keys', 'create', '--label', 'zapier')).stdout);
    expect(key.apiKey).to.match(/^syk_/);
    expect(json((await cli('keys', 'list')).stdout).items.map((k: { id: string }) => k.id)).to.include(key.id);

    const file = path.join(dataDir, 'wf.yaml');
    writeFileSync(file, YAML.stringify({ ...demoWorkflow, name: 'From YAML' }));
    const wf = json((await cli('workflow', 'deploy', file)).stdout);
    expect(wf).to.include({ name: 'From YAML', version: 1 });
    writeFileSync(
      file,
      YAML.stringify({
        ...demoWorkflow,
        name: 'From YAML v2',
        steps: [demoWorkflow.steps[0], { ...demoWorkflow.steps[1], name: 'Write it' }],
      }),
    );
    const wf2 = json((await cli('workflow', 'deploy', file, '--id', wf.automationId)).stdout);
    expect(wf2).to.include({ version: 2 });
    expect(wf2.stepMap).to.deep.equal({ 0: 1, 1: 2 });

    const trg = json((await cli('trigger', 'create', '--workflow', wf.automationId, '--kind', 'webhook')).stdout);
    expect(trg).to.include({ kind: 'webhook', automationId: wf.automationId });
    const triggers = json((await cli('trigger', 'list', '--workflow', wf.automationId)).stdout);
    expect(triggers.items.map((t: { triggerId: string }) => t.triggerId)).to.include(trg.triggerId);
    const workflows = json((await cli('workflow', 'list')).stdout);
    expect(workflows.items.map((w: { automationId: string }) => w.automationId)).to.include(wf.automationId);

    writeFileSync(file, YAML.stringify({ name: 'no steps', steps: [] }));
    const invalid = await cli('workflow', 'deploy', file);
    expect(invalid.code).to.equal(1);
    expect(invalid.stderr).to.match(/invalid|steps/i);

    const revoked = json((await cli('credentials', 'revoke', cred.id)).stdout);
    expect(revoked.revokedAt).to.be.a('string');
    expect((await cli('token', '--client-id', cred.clientId, '--client-secret', cred.clientSecret)).code).to.equal(1);

    const rotated = json((await cli('signing-keys:rotate')).stdout);
    expect(rotated.kid).to.be.a('string');
  });

  it('no lock-outs: the last active credential and key are refused without --force and revoked with it', async () => {
    const active = (items: { id: string; revokedAt: string | null }[]) => items.filter((i) => i.revokedAt === null);
    const [lastCred, ...moreCreds] = active(json((await cli('credentials', 'list')).stdout).items);
    expect(moreCreds, 'the first test left one active credential (the admin one)').to.have.length(0);
    const refused = await cli('credentials', 'revoke', lastCred!.id);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('last active credential').and.contain('--force');
    expect(json((await cli('credentials', 'revoke', lastCred!.id, '--force')).stdout).revokedAt).to.be.a('string');

    const keys = active(json((await cli('keys', 'list')).stdout).items);
    for (const k of keys.slice(1)) expect((await cli('keys', 'revoke', k.id)).code).to.equal(0);
    const lastKey = await cli('keys', 'revoke', keys[0]!.id);
    expect(lastKey.code, 'enabled triggers still need a key').to.equal(1);
    expect(lastKey.stderr).to.contain('last active API key');
    expect(json((await cli('keys', 'revoke', keys[0]!.id, '--force')).stdout).revokedAt).to.be.a('string');
  });

  // Last: a second organisation makes --org necessary for every later call.
  it('org:create adds an organisation; collections create, list, show and delete', async () => {
    const org = json((await cli('org:create', '--name', 'Second')).stdout);
    expect(org.id).to.match(/^org_/);
    const ambiguous = await cli('workflow', 'list');
    expect([ambiguous.code, ambiguous.stderr]).to.deep.equal([
      1,
      'switchyard: several organisations: pass --org <id>\n',
    ]);
    const inOrg = (...args: string[]) => cli(...args, '--org', org.id);
    const created = json((await inOrg('collections', 'create', '--name', 'Leads', '--type', 'vault')).stdout);
    expect(created).to.include({ name: 'Leads', type: 'vault' });
    const listed = json((await inOrg('collections', 'list', '--type', 'vault')).stdout);
    expect(listed.items.map((c: { collectionId: string }) => c.collectionId)).to.deep.equal([created.collectionId]);
    expect(json((await inOrg('collections', 'show', created.collectionId)).stdout)).to.include({
      collectionId: created.collectionId,
    });
    expect((await inOrg('collections', 'delete', created.collectionId)).code).to.equal(0);
    const gone = await inOrg('collections', 'show', created.collectionId);
    expect(gone.code).to.equal(1);
  });
});
