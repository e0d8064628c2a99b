/**
 * Redis queue: a run that is PENDING with no job in Redis (its job was removed after a
 * handler failure, or Redis lost it) is announced again by the workers' recovery sweep.
 */
import { expect } from 'chai';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { createRuntime, type Runtime } from '../../../src/app.js';
import { createOrganization } from '../../../src/auth/index.js';
import { createWorkflow } from '../../../src/engine/index.js';
import { runRows, insertRuns, loadRunForWorker } from '../../../src/runs/runs.js';
import { createTestStore, type TestStore, dropRedisKeys } from '../../helpers/store.js';

describe('run workers: stale PENDING runs on the Redis queue', function () {
  this.timeout(30_000);
  const prefix = `sy-stale-${process.pid}-${Date.now()}`;
  let store: TestStore;
  let runtime: Runtime;
  before(async () => {
    store = await createTestStore('sqlite');
    const config = loadConfig({
      DATA_DIR: store.dataDir,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: prefix,
      RUN_LEASE_MS: '600',
      RUN_CONCURRENCY: '1',
      SEED_DEMO: 'false',
    });
    runtime = await createRuntime(config, createLogger('silent'), { db: store.db });
  });
  after(async () => {
    await runtime.close();
    await store.close();
    await dropRedisKeys('redis://127.0.0.1:6379', prefix);
  });

  it('runs a PENDING run that was never queued, once it is older than a lease', async () => {
    const { db } = runtime.services;
    const org = await createOrganization(db, { name: 'Stale' });
    const wf = await createWorkflow(db, org.id, { name: 'w', steps: [{ type: 'code', name: 's', code: 'return 7;' }] });
    const rows = runRows({
      orgId: org.id,
      automationId: wf.automationId,
      automationVersion: 1,
      triggerId: null,
      inputs: {},
      startedBy: 'api_trigger',
      timeoutMs: 60_000,
    });
    await insertRuns(db, [rows]); // committed but never enqueued: no job exists in Redis
    const runId = rows.run.id as string;
    const deadline = Date.now() + 15_000;
    let status = 'PENDING';
    while (Date.now() < deadline && status !== 'COMPLETE') {
      await new Promise((r) => setTimeout(r, 200));
      status = (await loadRunForWorker(db, runId))!.status;
    }
    expect(status).to.equal('COMPLETE');
  });
});
