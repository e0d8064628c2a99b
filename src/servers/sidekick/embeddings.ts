/**
 * Client of an OpenAI-compatible embeddings API (`POST {EMBEDDINGS_URL}/embeddings`: OpenAI,
 * Ollama `nomic-embed-text`, vLLM, Text Embeddings Inference …), for semantic discovery
 * (README.md "Semantic ranking").
 *
 * - Documents are embedded in batches of DOC_BATCH texts, each request within DOC_TIMEOUT_MS.
 * - A request's embedding is waited for within the budget (EMBEDDINGS_BUDGET_MS, default
 *   300 ms). Past it the caller ranks lexically; the embedding still finishes in the background
 *   and lands in the query cache (QUERY_CACHE entries), so a repeated request uses it.
 * - The query cache and the calls under way are per organisation (the key starts with its id):
 *   a request text is the organisation's own, and a cached or shared embedding would answer
 *   another organisation's identical request faster and with other scores, telling it what was
 *   asked before.
 * - Every vector is scaled to unit length, so a dot product is the cosine similarity.
 * - State (`status()`): `ok` after a successful call, `error` with the reason after a failed or
 *   late one. A failure is logged (never the key) when the state changes, at most once a minute,
 *   and /readyz shows the state.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from '../../config/logger.js';

const DOC_BATCH = 64;
const DOC_TIMEOUT_MS = 60_000;
/** Requests whose embeddings are kept in memory. */
const QUERY_CACHE = 2_000;
/** Longest text sent: providers refuse inputs over their context (8k tokens for OpenAI's). */
const MAX_CHARS = 8_000;
const LOG_EVERY_MS = 60_000;

export interface EmbeddingsOptions {
  url: string;
  model: string;
  apiKey: string | null;
  budgetMs: number;
  log: Logger;
  fetchImpl?: typeof fetch;
}

export interface EmbeddingsStatus {
  state: 'unknown' | 'ok' | 'error';
  model: string;
  /** Why the last call failed (state `error`). */
  error?: string;
  /** When the state last changed (ISO 8601). */
  since: string;
}

export class EmbeddingsError extends Error {}

/** `https://api.openai.com/v1` → `…/v1/embeddings`; a URL already ending in /embeddings is kept. */
export function embeddingsEndpoint(url: string): string {
  const base = url.replace(/\/+$/, '');
  return /\/embeddings$/.test(base) ? base : `${base}/embeddings`;
}

export class EmbeddingsProvider {
  readonly model: string;
  private readonly endpoint: string;
  private readonly fetchImpl: typeof fetch;
  /** Request embeddings by `<organisation>\0<request>` (queryKey). */
  private readonly queries = new LRUCache<string, Float32Array>({ max: QUERY_CACHE });
  /** Query embeddings under way, so concurrent identical requests of one organisation share one call. */
  private readonly inflight = new Map<string, Promise<Float32Array>>();
  private state: EmbeddingsStatus;
  private lastWarn = -Infinity;
  private warned = false;

  constructor(private readonly opts: EmbeddingsOptions) {
    this.model = opts.model;
    this.endpoint = embeddingsEndpoint(opts.url);
    this.fetchImpl = opts.fetchImpl ?? fetch;
    this.state = { state: 'unknown', model: opts.model, since: new Date().toISOString() };
  }

  status(): EmbeddingsStatus {
    return { ...this.state };
  }

  /** Embeddings of documents, in order; throws EmbeddingsError when the provider fails. */
  async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += DOC_BATCH) {
      out.push(...(await this.call(texts.slice(i, i + DOC_BATCH), DOC_TIMEOUT_MS)));
    }
    return out;
  }

  /**
   * The embedding of an organisation's request if it is in that organisation's cache or
   * arrives within the budget; otherwise undefined (the caller ranks lexically) while the call
   * goes on and fills the organisation's cache.
   */
  async embedQuery(orgId: string, text: string): Promise<Float32Array | undefined> {
    const key = queryKey(orgId, text);
    const cached = this.queries.get(key);
    if (cached) return cached;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.call([text], DOC_TIMEOUT_MS).then(([v]) => {
        this.queries.set(key, v!);
        return v!;
      });
      this.inflight.set(key, pending);
      // Settles the map whatever happens; a failure is already in the state and the log.
      pending.then(
        () => this.inflight.delete(key),
        () => this.inflight.delete(key),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.opts.budgetMs);
    });
    try {
      const v = await Promise.race([pending, late]);
      if (v === undefined) this.fail(`no answer within the budget of ${this.opts.budgetMs} ms (EMBEDDINGS_BUDGET_MS)`);
      return v;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private async call(texts: readonly string[], timeoutMs: number): Promise<Float32Array[]> {
    let res: Response;
    try {
      res = await this.fetchImpl(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.model, input: texts.map((t) => t.slice(0, MAX_CHARS) || ' ') }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw this.fail(`cannot reach ${this.endpoint}: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const body = (await res.text().catch(() => '')).slice(0, 200);
      throw this.fail(`${this.endpoint} answered ${res.status}${body ? `: ${body}` : ''}`);
    }
    let vectors: Float32Array[];
    try {
      vectors = parseEmbeddings(await res.json(), texts.length);
    } catch (err) {
      throw this.fail(`${this.endpoint} answered an unusable body: ${(err as Error).message}`);
    }
    this.ok();
    return vectors;
  }

  private ok(): void {
    if (this.state.state === 'ok') return;
    // Said once after each logged failure, so a provider that flaps logs a pair a minute at most.
    if (this.warned)
      this.opts.log.info({ model: this.model }, 'embeddings provider answers again: semantic ranking resumed');
    this.warned = false;
    this.state = { state: 'ok', model: this.model, since: new Date().toISOString() };
  }

  private fail(reason: string): EmbeddingsError {
    if (this.state.state !== 'error' || this.state.error !== reason) {
      const now = Date.now();
      // A provider that keeps failing and recovering is logged at most once per LOG_EVERY_MS.
      if (now - this.lastWarn >= LOG_EVERY_MS) {
        this.lastWarn = now;
        this.warned = true;
        this.opts.log.warn({ model: this.model, reason }, 'embeddings provider unavailable: discovery ranks lexically');
      }
      this.state = { state: 'error', model: this.model, error: reason, since: new Date(now).toISOString() };
    }
    return new EmbeddingsError(reason);
  }
}

/** Cache key of a request: the organisation first, so no organisation reaches another's entries. */
const queryKey = (orgId: string, text: string): string => `${orgId}\u0000${text.trim().toLowerCase()}`;

/** `{data: [{index, embedding: number[]}]}` → unit vectors in input order, one per input. */
export function parseEmbeddings(body: unknown, expected: number): Float32Array[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== expected) throw new Error(`expected data with ${expected} embeddings`);
  const out = new Array<Float32Array>(expected);
  let dims = -1;
  data.forEach((item: { index?: unknown; embedding?: unknown }, i) => {
    const index = typeof item?.index === 'number' ? item.index : i;
    const e = item?.embedding;
    if (!Array.isArray(e) || e.length === 0 || !e.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new Error(`embedding ${index} is not an array of numbers`);
    }
    if (dims !== -1 && e.length !== dims) throw new Error('embeddings of different lengths');
    if (index < 0 || index >= expected || out[index]) throw new Error(`bad embedding index ${index}`);
    dims = e.length;
    out[index] = normalize(Float32Array.from(e as number[]));
  });
  return out;
}

function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}
