/**
 * A trigger-URL receiver on loopback for event tests: records every call (headers and JSON
 * body) and answers with a configurable status and `X-Pf-Run-Id`.
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// CommonJS modules: at run time the default import is the class/plugin itself.
type Ajv2020Class = typeof Ajv2020Module.default;
type AddFormats = typeof addFormatsModule.default;
const Ajv2020: Ajv2020Class =
  (Ajv2020Module as unknown as { default?: Ajv2020Class }).default ?? (Ajv2020Module as unknown as Ajv2020Class);
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

export interface ReceivedCall {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, any>;
}

export interface Receiver {
  url: string;
  calls: ReceivedCall[];
  /** Status to answer (default 202). */
  status: number;
  /** Resolves when at least `n` calls arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedCall[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  let waiters: Array<() => void> = [];
  const state = { status: 202 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      calls.push({
        path: req.url ?? '/',
        headers: req.headers,
        body: text ? (JSON.parse(text) as Record<string, any>) : {},
      });
      res
        .writeHead(state.status, { 'content-type': 'application/json', 'x-pf-run-id': `run_received_${calls.length}` })
        .end('{}');
      for (const w of waiters) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    get status() {
      return state.status;
    },
    set status(s: number) {
      state.status = s;
    },
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (calls.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver: ${calls.length} of ${n} calls after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 50);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
        waiters = [];
      }
      return calls;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
const schemaDir = new URL('../../schemas/events/', import.meta.url);
const validators = {
  datastore: ajv.compile(JSON.parse(readFileSync(new URL('datastore-event.schema.json', schemaDir), 'utf8')) as object),
  filestorage: ajv.compile(
    JSON.parse(readFileSync(new URL('filestorage-event.schema.json', schemaDir), 'utf8')) as object,
  ),
};

/** The schema errors of an event payload (schemas/events), empty when it conforms. */
export function payloadErrors(kind: 'datastore' | 'filestorage', payload: unknown): string[] {
  const v = validators[kind];
  return v(payload) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}
