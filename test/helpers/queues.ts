/** Queue test helpers: a queue over a deployed workflow, CSV uploads through the presigned URL, batch polling. */
import { expect } from 'chai';
import { call, type TestServer, type TestOrg } from './server.js';
import { createQueue, type QueueCreate, type QueueRecord } from '../../src/queues/queues.js';

export async function makeQueue(server: TestServer, org: TestOrg, input: QueueCreate): Promise<QueueRecord> {
  return createQueue(server.app.services.db, org.orgId, input);
}

/** createCsvUploadUrl + PUT; returns the csvKey. */
export async function uploadCsv(
  server: TestServer,
  org: TestOrg,
  queueId: string,
  bytes: Buffer | string,
  filename = 'rows.csv',
): Promise<string> {
  return uploadCsvTo(server.baseUrl, org.token, queueId, bytes, filename);
}

/** uploadCsv against any service: its base URL and a bearer token of the queue's organisation. */
export async function uploadCsvTo(
  baseUrl: string,
  token: string,
  queueId: string,
  bytes: Buffer | string,
  filename = 'rows.csv',
): Promise<string> {
  const data = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  const url = await call(baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, {
    token,
    body: { filename, sizeBytes: data.length },
  });
  expect(url.status, url.text).to.equal(200);
  const put = await fetch(url.body.uploadUrl, { method: 'PUT', headers: url.body.headers, body: data });
  expect(put.status, await put.clone().text()).to.equal(200);
  return url.body.csvKey as string;
}

/** Polls getQueueBatch until `done` holds. */
export async function waitBatch(
  server: TestServer,
  org: TestOrg,
  queueId: string,
  batchId: string,
  done: (b: any) => boolean,
  timeoutMs = 30_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(server.baseUrl, 'GET', `/api/queues/${queueId}/batches/${batchId}`, { token: org.token });
    expect(res.status, res.text).to.equal(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`batch still ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 40));
  }
}

export const finished = (b: { status: string }) => ['completed', 'failed', 'cancelled'].includes(b.status);
