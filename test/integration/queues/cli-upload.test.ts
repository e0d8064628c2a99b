/**
 * `switchyard queue upload FILE --queue ID --trigger ID` against a real server (openapi/queues.yaml:
 * createCsvUploadUrl, the presigned PUT, createCsvBatch, getQueueBatch, listBatchRowErrors), run
 * as a person at a terminal would: a child process through bin/switchyard.js. The CLI's token
 * comes from the server's store (same DATA_DIR and PUBLIC_URL) or from SWITCHYARD_TOKEN.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code } from '../../helpers/runs.js';
import { writeCsv, leadRows } from '../../helpers/csv-files.js';
import { createQueue } from '../../../src/queues/queues.js';
import { runCli, type CliResult } from '../../helpers/process.js';

describe('queues: switchyard queue upload (CLI over HTTP)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  let dir: string;
  let queueId: string;
  let triggerId: string;

  /** The CLI on the server's store; `env` overrides (SWITCHYARD_TOKEN, SWITCHYARD_URL, DATA_DIR). */
  const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runCli(args, {
      DATA_DIR: server.store.dataDir,
      DATABASE_URL: '',
      PUBLIC_URL: server.baseUrl,
      SWITCHYARD_TOKEN: '',
      SWITCHYARD_URL: '',
      SWITCHYARD_ORG: '',
      LOG_LEVEL: 'warn',
      ...env,
    });
  const upload = (file: string, ...more: string[]) =>
    cli(['queue', 'upload', file, '--queue', queueId, '--trigger', triggerId, '--org', org.orgId, ...more]);

  /** Header, two good rows, one with three columns (record 4), two good rows: 5 data rows, 4 loaded. */
  const mixedCsv = (name: string) =>
    writeCsv(dir, name, ['email,plan', ...leadRows(2), 'bad@example.com,pro,extra', ...leadRows(2, 3)]);

  before(async () => {
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'CSV uploads');
    const deployed = await deploy(server, org, {
      name: 'Echo lead',
      steps: [code('Echo', 'return `${ctx.inputs.email}:${ctx.inputs.plan}`;', { resultType: 'plaintext' })],
    });
    triggerId = deployed.apiTriggerId;
    queueId = (await createQueue(server.app.services.db, org.orgId, { name: 'Leads', triggerId })).id;
    dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-csv-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });
  afterEach(() => server.assertResponsesValid());

  it('uploads, follows the batch to completed and prints it as JSON with the skipped row (token from the store)', async () => {
    const r = await upload(mixedCsv('leads.csv'), '--json');
    expect(r.code, r.stderr).to.equal(0);
    const batch = JSON.parse(r.stdout);
    expect(batch).to.include({
      queueId,
      triggerId,
      filename: 'leads.csv',
      status: 'completed',
      totalRows: 5,
      readRows: 5,
      loadedRows: 4,
      skippedRows: 1,
      runsCompleted: 4,
      runsFailed: 0,
      runsCancelled: 0,
      runsPending: 0,
      runsRunning: 0,
      failureReason: null,
    });
    expect(batch.batchId).to.be.a('string');
    expect(batch.rowErrors).to.have.length(1);
    expect(batch.rowErrors[0]).to.include({
      rowNumber: 4,
      reason: 'column_count',
      rawExcerpt: 'bad@example.com,pro,extra',
    });
    // stderr is not a terminal here: plain progress lines, no bar glyphs or cursor moves.
    expect(r.stderr)
      .to.match(/^upload .*100%/m)
      .and.match(/^rows read .*5\/5/m)
      .and.match(/^runs finished .*4\/4/m);
    expect(r.stderr).not.to.contain('\x1b[');

    // The server agrees with what the CLI printed.
    const got = await call(server.baseUrl, 'GET', `/api/queues/${queueId}/batches/${batch.batchId}`, {
      token: org.token,
    });
    expect(got.status, got.text).to.equal(200);
    expect(got.body).to.include({ status: 'completed', loadedRows: 4, skippedRows: 1 });
  });

  it('prints a short human summary with the row errors as "row N: reason: message — excerpt"', async () => {
    const r = await upload(mixedCsv('human.csv'));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^batch \S+ completed: human\.csv/m);
    expect(r.stdout).to.contain('rows: 4 loaded, 1 skipped, 5 read of 5');
    expect(r.stdout).to.contain('runs: 4 completed, 0 failed, 0 cancelled');
    expect(r.stdout).to.match(/^ {2}row 4: column_count: .+ — bad@example\.com,pro,extra$/m);
  });

  it('--no-wait returns once the batch exists; SWITCHYARD_TOKEN and SWITCHYARD_URL need no store', async () => {
    const file = writeCsv(dir, 'quick.csv', ['email,plan', ...leadRows(3)], '\r\n');
    const elsewhere = path.join(dir, 'no-store');
    mkdirSync(elsewhere);
    const r = await cli(['queue', 'upload', file, '--queue', queueId, '--trigger', triggerId, '--no-wait', '--json'], {
      SWITCHYARD_TOKEN: org.token,
      SWITCHYARD_URL: server.baseUrl,
      DATA_DIR: elsewhere,
      PUBLIC_URL: 'http://127.0.0.1:1',
    });
    expect(r.code, r.stderr).to.equal(0);
    const batch = JSON.parse(r.stdout);
    expect(batch).to.include({ queueId, filename: 'quick.csv', totalRows: 3 });
    expect(['pending', 'running', 'completed']).to.include(batch.status);
    expect(r.stderr).not.to.match(/^rows read/m);
    // Let the batch finish before the server closes.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await call(server.baseUrl, 'GET', `/api/queues/${queueId}/batches/${batch.batchId}`, {
        token: org.token,
      });
      expect(got.status, got.text).to.equal(200);
      if (got.body.status === 'completed') break;
      if (Date.now() > deadline) throw new Error(`batch still ${got.body.status}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  });

  it("a missing file, a directory and an empty file fail before any call; blank lines only are the server's 400 empty_file", async () => {
    const missing = await upload(path.join(dir, 'nope.csv'));
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/^switchyard: no such file: .*nope\.csv$/m);
    const folder = await upload(dir);
    expect(folder.code).to.equal(1);
    expect(folder.stderr).to.match(/^switchyard: not a file: /m);
    const emptyFile = path.join(dir, 'empty.csv');
    writeFileSync(emptyFile, '');
    const empty = await upload(emptyFile);
    expect(empty.code).to.equal(1);
    expect(empty.stderr).to.match(/^switchyard: .*empty\.csv is empty$/m);
    const blank = await upload(writeCsv(dir, 'blank.csv', ['', '']));
    expect(blank.code).to.equal(1);
    expect(blank.stderr).to.match(/^switchyard: create batch: 400 empty_file: /m);
  });

  it('an unknown queue prints 404 queue_not_found; a bad trigger 404 trigger_not_found; a .txt name 400 invalid_filename', async () => {
    const file = mixedCsv('errors.csv');
    const noQueue = await cli([
      'queue',
      'upload',
      file,
      '--queue',
      'queue_00000000000000000000000000000000',
      '--trigger',
      triggerId,
      '--org',
      org.orgId,
    ]);
    expect(noQueue.code).to.equal(1);
    expect(noQueue.stderr).to.match(/^switchyard: create upload URL: 404 queue_not_found: /m);

    const noTrigger = await cli([
      'queue',
      'upload',
      file,
      '--queue',
      queueId,
      '--trigger',
      'trg_nope',
      '--org',
      org.orgId,
    ]);
    expect(noTrigger.code).to.equal(1);
    expect(noTrigger.stderr).to.match(/^switchyard: create batch: 404 trigger_not_found: /m);

    const txt = await upload(writeCsv(dir, 'leads.txt', ['email,plan', ...leadRows(1)]));
    expect(txt.code).to.equal(1);
    expect(txt.stderr).to.match(/^switchyard: create upload URL: 400 invalid_filename: /m);
  });

  it("a bad token is reported with the server's 401 error", async () => {
    const r = await cli(
      ['queue', 'upload', mixedCsv('token.csv'), '--queue', queueId, '--trigger', triggerId, '--url', server.baseUrl],
      { SWITCHYARD_TOKEN: 'not-a-token' },
    );
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/^switchyard: create upload URL: 401 invalid_token: /m);
  });
});
