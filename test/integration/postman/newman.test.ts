/**
 * The generated Postman collection, run by newman against a fresh service on loopback with
 * the environment written on first start (DATA_DIR/postman_environment.json): every request
 * must pass its own test script (documented status, response schema, headers, captures),
 * and every response must match the OpenAPI bundle (DESIGN.md section 2).
 * STORE=pg or STORE=sqlite picks one store; otherwise every store this machine has.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { StoreKind } from '../../../src/storage/db.js';
import { bootstrapIfEmpty } from '../../../src/bootstrap/index.js';
import { POSTMAN_ENV_FILE } from '../../../src/bootstrap/postman-env.js';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { describeFailures, loadCollection, requestsOf, runNewman, type NewmanSummary } from './newman.js';

const chosen = process.env.STORE;
const kinds: StoreKind[] = chosen === 'pg' || chosen === 'sqlite' ? [chosen] : await storeKinds();

for (const kind of kinds) {
  describe(`Postman collection under newman (${kind})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let summary: NewmanSummary;
    let envFile: string;
    const collection = loadCollection();

    before(async () => {
      server = await startTestServer(kind);
      // What a first start does: demo organisation, bootstrap.json and the Postman environment.
      await bootstrapIfEmpty(server.app.services);
      envFile = path.join(server.store.dataDir, POSTMAN_ENV_FILE);
      summary = await runNewman(collection, envFile);
    });
    after(async () => server?.close());

    it('first start wrote the environment next to bootstrap.json, mode 0600', () => {
      expect(existsSync(envFile)).to.equal(true);
      expect(statSync(envFile).mode & 0o777).to.equal(0o600);
    });

    it('newman: every assertion passes', function () {
      const { requests, assertions } = summary.run.stats;
      const seconds = ((summary.run.timings.completed - summary.run.timings.started) / 1000).toFixed(1);
      this.test!.title = `newman: ${requests.total} requests, ${assertions.total} assertions, ${assertions.failed} failed (${seconds} s)`;
      expect(describeFailures(summary), 'newman failures').to.equal('');
      expect(assertions.failed).to.equal(0);
      expect(requests.failed).to.equal(0);
      expect(summary.run.stats.testScripts.failed, 'test scripts that threw').to.equal(0);
      expect(summary.run.stats.prerequestScripts.failed, 'pre-request scripts that threw').to.equal(0);
    });

    it('every request ran and asserted something', () => {
      const counts = new Map<string, number>();
      for (const e of summary.run.executions)
        counts.set(e.item.id, (counts.get(e.item.id) ?? 0) + (e.assertions?.length ?? 0));
      const silent = requestsOf(collection)
        .filter((r) => !(counts.get(r.id)! > 0))
        .map((r) => `${r.folder} / ${r.name}`);
      expect(silent, 'requests that did not run or asserted nothing').to.deep.equal([]);
    });

    it('every response matched the OpenAPI document', () => server.assertResponsesValid());
  });
}

// The environment a person points at 127.0.0.1 of a service started without PUBLIC_URL (which
// then names localhost) and without OUTBOUND_ALLOWLIST: its own trigger URLs on that address are
// the service itself ("Set a collection's trigger URLs" included).
describe('Postman collection under newman: baseUrl 127.0.0.1, no PUBLIC_URL, no OUTBOUND_ALLOWLIST (sqlite)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let summary: NewmanSummary;

  before(async () => {
    server = await startTestServer('sqlite', { PUBLIC_URL: undefined, OUTBOUND_ALLOWLIST: '' });
    await bootstrapIfEmpty(server.app.services);
    const envFile = path.join(server.store.dataDir, POSTMAN_ENV_FILE);
    const env = JSON.parse(readFileSync(envFile, 'utf8')) as { values: Array<{ key: string; value: string }> };
    for (const v of env.values) if (v.key === 'baseUrl') v.value = server.baseUrl;
    const loopbackEnv = path.join(server.store.dataDir, 'loopback.postman_environment.json');
    writeFileSync(loopbackEnv, JSON.stringify(env));
    summary = await runNewman(loadCollection(), loopbackEnv);
  });
  after(async () => server?.close());

  it('newman: every assertion passes', () => {
    expect(describeFailures(summary), 'newman failures').to.equal('');
    expect(summary.run.stats.requests.failed).to.equal(0);
  });
});
