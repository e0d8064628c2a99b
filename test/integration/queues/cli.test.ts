/** `npx switchyard queue …` against a real store, as a person at a terminal would use it (src/cli/queues.ts). */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../../helpers/process.js';

describe('process: the switchyard queue verbs', function () {
  this.timeout(120_000);
  let dataDir: string;
  let demo: { queueId: string; apiTriggerId: string; webhookTriggerId: string; channelTriggerId: string };
  const cli = (...args: string[]) => runCli(args, { DATA_DIR: dataDir });
  const ok = async (...args: string[]) => {
    const r = await cli(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
    return JSON.parse(r.stdout);
  };
  const fails = async (...args: string[]) => {
    const r = await cli(...args);
    expect(r.code, `${args.join(' ')} should fail: ${r.stdout}`).to.equal(1);
    return r.stderr;
  };

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-queue-cli-'));
    expect((await cli('init')).code).to.equal(0);
    demo = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).demo;
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('create, list, show, update, pause, resume, items, batches and delete', async () => {
    const listed = await ok('queue', 'list');
    expect(listed.items.map((q: { queueId: string }) => q.queueId)).to.deep.equal([demo.queueId]);
    expect(listed.items[0]).to.include({
      name: 'Demo queue',
      triggerId: demo.apiTriggerId,
      concurrencyLimit: 2,
      paused: false,
    });

    const created = await ok(
      'queue',
      'create',
      '--name',
      'Leads',
      '--trigger',
      demo.apiTriggerId,
      '--concurrency',
      '7',
      '--priority',
      '9',
      '--max-retries',
      '2',
      '--description',
      'From the CLI',
    );
    expect(created.queueId).to.match(/^queue_[0-9a-f]{32}$/);
    expect(created).to.include({
      name: 'Leads',
      description: 'From the CLI',
      concurrencyLimit: 7,
      priority: 9,
      maxRetries: 2,
      paused: false,
      version: 1,
    });
    const id = created.queueId as string;
    expect(await ok('queue', 'show', id)).to.deep.equal(created);

    expect(await ok('queue', 'pause', id)).to.include({ paused: true, version: 2 });
    expect(await ok('queue', 'resume', id)).to.include({ paused: false, version: 3 });
    const updated = await ok(
      'queue',
      'update',
      id,
      '--paused',
      '--priority',
      '1',
      '--trigger',
      demo.webhookTriggerId,
      '--name',
      'Leads (webhook)',
    );
    expect(updated).to.include({
      paused: true,
      priority: 1,
      triggerId: demo.webhookTriggerId,
      name: 'Leads (webhook)',
      concurrencyLimit: 7,
      version: 4,
    });
    expect(await ok('queue', 'update', id, '--no-paused')).to.include({ paused: false, version: 5 });

    const defaults = await ok('queue', 'create', '--name', 'Paused', '--trigger', demo.apiTriggerId, '--paused');
    expect(defaults).to.include({ concurrencyLimit: 5, priority: 5, maxRetries: 0, paused: true });
    const page = await ok('queue', 'list', '--limit', '2');
    expect(page.items.map((q: { queueId: string }) => q.queueId)).to.deep.equal([demo.queueId, id]);
    expect(page.nextCursor).to.be.a('string');
    expect(
      (await ok('queue', 'list', '--cursor', page.nextCursor)).items.map((q: { queueId: string }) => q.queueId),
    ).to.deep.equal([defaults.queueId]);

    expect(await ok('queue', 'items', id)).to.deep.equal({ items: [], nextCursor: null });
    expect(
      await ok(
        'queue',
        'items',
        id,
        '--status',
        'failed',
        '--batch',
        'batch_00000000000000000000000000000000',
        '--limit',
        '5',
      ),
    ).to.deep.equal({ items: [], nextCursor: null });
    expect(await ok('queue', 'batches', id)).to.deep.equal({ items: [], nextCursor: null });

    expect(await ok('queue', 'delete', id)).to.deep.equal({ queueId: id, deleted: true });
    expect(await fails('queue', 'show', id)).to.contain(`no queue ${id}`);
    expect((await ok('queue', 'list')).items.map((q: { queueId: string }) => q.queueId)).to.deep.equal([
      demo.queueId,
      defaults.queueId,
    ]);
  });

  it('refuses bad settings, unknown triggers and unknown ids with a clear message and exit code 1', async () => {
    expect(
      await fails('queue', 'create', '--name', 'x', '--trigger', demo.apiTriggerId, '--concurrency', '0'),
    ).to.contain('concurrencyLimit must be an integer from 1 to 1000');
    expect(
      await fails('queue', 'create', '--name', 'x', '--trigger', demo.apiTriggerId, '--priority', 'high'),
    ).to.contain('--priority must be an integer');
    expect(await fails('queue', 'create', '--name', '', '--trigger', demo.apiTriggerId)).to.contain(
      'name must be 1 to 200 characters',
    );
    expect(
      await fails('queue', 'create', '--name', 'x', '--trigger', 'trg_00000000000000000000000000000000'),
    ).to.contain('no API or webhook trigger trg_00000000000000000000000000000000');
    // An agent channel is a trigger, but not of a workflow.
    expect(await fails('queue', 'create', '--name', 'x', '--trigger', demo.channelTriggerId)).to.contain(
      'no API or webhook trigger',
    );
    expect(await fails('queue', 'update', demo.queueId)).to.contain('nothing to change');
    expect(await fails('queue', 'pause', 'queue_00000000000000000000000000000000')).to.contain(
      'no queue queue_00000000000000000000000000000000',
    );
    expect(await fails('queue', 'delete', 'queue_00000000000000000000000000000000')).to.contain('no queue');
    expect(await fails('queue', 'items', demo.queueId, '--status', 'done')).to.contain(
      '--status must be one of queued, pending, running, completed, failed, cancelled',
    );
    expect(await fails('queue', 'list', '--cursor', 'forged')).to.contain('cursor is invalid');
    expect(
      await fails('queue', 'row-errors', 'batch_00000000000000000000000000000000', '--queue', demo.queueId),
    ).to.contain(`no batch batch_00000000000000000000000000000000 in queue ${demo.queueId}`);
    // Nothing was created by the refused commands, and the demo queue is unchanged.
    const queues = (await ok('queue', 'list')).items as { name: string; version: number; queueId: string }[];
    expect(queues.map((q) => q.name)).to.not.include('x');
    expect(queues.find((q) => q.queueId === demo.queueId)).to.include({ version: 1 });
  });
});
