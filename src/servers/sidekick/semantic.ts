/**
 * Semantic ranking for discovery (README.md "Semantic ranking").
 *
 * Each organisation's index (`SemanticIndex`) holds one unit vector per document: its tools,
 * connections, resources and the skills. A document is embedded once per SHA-256 of its text
 * (`embedText`): vectors are looked up in this process's cache, then in the store
 * (migration 009), and only the rest is sent to the provider, in the background — the lexical
 * index never waits for it, and a document without a vector yet is ranked lexically only.
 * A failed fill is retried after RETRY_MS, on the next call that needs it.
 *
 * Scoring a request: the cosine of its vector with every document's. Cosines mean different
 * things for different models (one model's unrelated texts sit at 0.1, another's at 0.6), so a
 * document's vector score is its z-score against the organisation's tools for that same
 * request: (cos − mean) / standard deviation over the tools. See discover.ts for how it is fused
 * with the lexical confidence.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { Logger } from '../../config/logger.js';
import type { CatalogConnection, CatalogResource, CatalogTool } from '../../gateway/index.js';
import type { EmbeddingsProvider, EmbeddingsStatus } from './embeddings.js';
import { loadVectors, pruneVectors, saveVectors, SHARED_SCOPE } from './embeddings-store.js';
import type { SkillDoc } from './skills.js';
import { dotScanner, type DotScanner } from './dots.js';

const RETRY_MS = 30_000;
/** Texts sent to the provider per round of a fill (then stored, and usable at once). */
const FILL_CHUNK = 256;
/** Summary of a description that is embedded: its first paragraph, up to this many characters. */
const SUMMARY_CHARS = 600;
/** Fewer tools than this with vectors: too few to measure what "unrelated" looks like. */
export const MIN_REFERENCE_DOCS = 20;
/** Bytes of vectors kept in the process-wide cache (shared by organisations). */
const CACHE_BYTES = 128 * 1024 * 1024;
/**
 * Stored vectors an organisation's documents no longer use are deleted after a complete fill,
 * at most once an hour per organisation and process, when they are older than a day.
 */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const PRUNE_AGE_MS = 24 * 60 * 60 * 1000;

export interface SemanticDoc {
  /** Unique within the organisation: `t:<tool id>`, `c:<connection id>`, `r:<resource id>`, `s:<skill>`. */
  key: string;
  /** The organisation's id, or SHARED_SCOPE for the service's own texts. */
  scope: string;
  text: string;
}

interface DocState {
  scope: string;
  hash: string;
  text: string;
  vector?: Float32Array;
}

/** z-scores of one request against the documents with vectors (see the file comment). */
export class RequestScores {
  constructor(
    private readonly docs: ScoredDocs,
    private readonly z: Float32Array,
    /** Tools with a vector (the reference population of the z-scores). */
    readonly reference: number,
  ) {}

  /** z-score of a document (`t:<id>` …); undefined when it has no vector yet. */
  get(key: string): number | undefined {
    const row = this.docs.row.get(key);
    return row === undefined ? undefined : this.z[row];
  }

  /** Keys of the documents whose kind prefix is `prefix` (`t:` …) with z above `min`, best first, at most n. */
  top(prefix: string, min: number, n: number): string[] {
    const hits: number[] = [];
    const { keys, kind } = this.docs;
    const code = prefix.charCodeAt(0);
    for (let i = 0; i < keys.length; i++) if (this.z[i]! > min && kind[i] === code) hits.push(i);
    return hits
      .sort((a, b) => this.z[b]! - this.z[a]!)
      .slice(0, n)
      .map((i) => keys[i]!);
  }
}

/** The documents with vectors as one row-major matrix (fast to scan), rebuilt when they change. */
interface ScoredDocs {
  keys: string[];
  row: Map<string, number>;
  tool: Uint8Array;
  /** Char code of each key's kind letter (`t`, `c`, `r`, `s`). */
  kind: Uint8Array;
  dims: number;
  /** The vectors as one row-major matrix, and their scan (dots.ts). */
  scanner: DotScanner;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The first paragraph of a description, cut at a word end. */
function summary(text: string): string {
  const first = text.trim().split(/\n\s*\n/)[0] ?? '';
  if (first.length <= SUMMARY_CHARS) return first;
  const cut = first.slice(0, SUMMARY_CHARS);
  return cut.slice(0, Math.max(cut.lastIndexOf(' '), SUMMARY_CHARS / 2));
}

/** `create_pull_request` / `createPullRequest` → `create pull request`. */
const nameWords = (name: string): string =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_\-./]+/g, ' ')
    .trim();

/** What is embedded for each kind of document. */
export const embedText = {
  tool: (t: CatalogTool): string =>
    `${t.serverTitle}: ${nameWords(t.tool.name)}${t.tool.title ? ` (${t.tool.title})` : ''}. ${summary(t.tool.description)}`,
  connection: (c: CatalogConnection, application: string): string =>
    `${c.name}: a connection to ${application || c.serviceKey}`,
  resource: (r: CatalogResource): string => `${r.name}: ${r.type}${r.description ? `. ${summary(r.description)}` : ''}`,
  skill: (s: SkillDoc): string => `${s.title || s.name}: ${summary(s.description || s.content)}`,
};

/** The provider, the process-wide vector cache, and the indexes of the organisations. */
export class Semantic {
  readonly vectors = new LRUCache<string, Float32Array>({
    maxSize: CACHE_BYTES,
    sizeCalculation: (v) => Math.max(1, v.byteLength),
  });
  private embedded = 0;
  /** When each organisation's stored vectors were last pruned by this process. */
  private readonly pruned = new LRUCache<string, number>({ max: 10_000 });
  /** The latest index of each organisation, while its cache keeps it. */
  private readonly live = new Map<string, WeakRef<SemanticIndex>>();

  /** `db` absent: vectors are kept in this process only (benchmarks). */
  constructor(
    readonly provider: EmbeddingsProvider,
    readonly log: Logger,
    private readonly db?: Knex,
  ) {}

  index(orgId: string): SemanticIndex {
    const index = new SemanticIndex(this, orgId);
    this.live.set(orgId, new WeakRef(index));
    return index;
  }

  /** Provider state plus texts embedded since start (for /readyz). */
  status(): EmbeddingsStatus & { embedded: number } {
    return { ...this.provider.status(), embedded: this.embedded };
  }

  /** Resolves when no organisation's index is filling (bench, pre-warm, tests). */
  async idleAll(): Promise<void> {
    for (const [orgId, ref] of this.live) {
      const index = ref.deref();
      if (index) await index.idle();
      else this.live.delete(orgId);
    }
  }

  /** Embeds texts through the provider and stores them; returns the vectors in order. */
  async embedAndStore(docs: readonly DocState[]): Promise<Float32Array[]> {
    const vectors = await this.provider.embedDocuments(docs.map((d) => d.text));
    this.embedded += vectors.length;
    const rows = docs.map((d, i) => ({ scope: d.scope, hash: d.hash, vector: vectors[i]! }));
    rows.forEach((r) => this.vectors.set(`${r.scope}:${r.hash}`, r.vector));
    if (this.db) await saveVectors(this.db, this.provider.model, rows);
    return vectors;
  }

  /**
   * Deletes the organisation's stored vectors that `hashes` (its documents' texts, all with
   * vectors) no longer include (embeddings-store.ts `pruneVectors`), at most once per
   * PRUNE_INTERVAL_MS. The service's own texts (SHARED_SCOPE) are not pruned: every organisation
   * shares them.
   */
  async prune(orgId: string, hashes: ReadonlySet<string>): Promise<void> {
    const now = Date.now();
    if (!this.db || orgId === SHARED_SCOPE || now - (this.pruned.get(orgId) ?? 0) < PRUNE_INTERVAL_MS) return;
    this.pruned.set(orgId, now);
    const deleted = await pruneVectors(this.db, orgId, this.provider.model, {
      keep: hashes,
      before: new Date(now - PRUNE_AGE_MS).toISOString(),
    });
    if (deleted > 0) this.log.info({ orgId, deleted }, 'discovery: stored embeddings no longer used were deleted');
  }

  /** Stored vectors of documents, keyed `scope:hash`. */
  async stored(docs: readonly DocState[]): Promise<Map<string, Float32Array>> {
    if (!this.db || docs.length === 0) return new Map();
    return loadVectors(this.db, [...new Set(docs.map((d) => d.scope))], this.provider.model, [
      ...new Set(docs.map((d) => d.hash)),
    ]);
  }
}

export class SemanticIndex {
  private readonly docs = new Map<string, DocState>();
  /** Documents with vectors, rebuilt when vectors arrive or documents change. */
  private scored: ScoredDocs | undefined;
  private job: Promise<void> | undefined;
  private retryAt = 0;

  constructor(
    private readonly semantic: Semantic,
    readonly orgId: string,
  ) {}

  /** Counted by `sync`, counted down as the fill attaches vectors (`pending` is asked on every discover). */
  private waiting = 0;

  /** Documents still waiting for a vector. */
  get pending(): number {
    return this.waiting;
  }

  /**
   * Makes the document set `docs`: unchanged texts keep their vectors, the others are filled in
   * the background (`fill`). Never waits for the provider.
   */
  sync(docs: readonly SemanticDoc[]): void {
    const next = new Map<string, DocState>();
    for (const d of docs) {
      const hash = sha256(d.text);
      const old = this.docs.get(d.key);
      if (old && old.hash === hash && old.scope === d.scope) next.set(d.key, old);
      else
        next.set(d.key, {
          scope: d.scope,
          hash,
          text: d.text,
          vector: this.semantic.vectors.get(`${d.scope}:${hash}`),
        });
    }
    this.docs.clear();
    this.waiting = 0;
    for (const [k, v] of next) {
      this.docs.set(k, v);
      if (!v.vector) this.waiting++;
    }
    this.scored = undefined;
    this.retryAt = 0;
    this.ensure();
  }

  /** Starts a fill when vectors are missing, none is running and no recent one failed. */
  ensure(): void {
    if (this.job || Date.now() < this.retryAt || this.pending === 0) return;
    this.job = this.fill()
      .catch((err: unknown) => {
        this.retryAt = Date.now() + RETRY_MS;
        this.semantic.log.warn(
          { orgId: this.orgId, err: (err as Error).message },
          'discovery: embedding documents failed; retried later',
        );
      })
      .finally(() => {
        this.job = undefined;
      });
  }

  /** Resolves when no fill is running (tests, bench, pre-warm). */
  async idle(): Promise<void> {
    while (this.job) await this.job;
  }

  /** z-scores of the documents against the request vector; undefined when too few tools have vectors. */
  score(query: Float32Array): RequestScores | undefined {
    const docs = this.scoredDocs(query.length);
    const { tool } = docs;
    const n = docs.keys.length;
    const z = new Float32Array(n);
    docs.scanner.run(query, z);
    let sum = 0;
    let sumSq = 0;
    let tools = 0;
    for (let i = 0; i < n; i++) {
      const dot = z[i]!;
      if (tool[i]) {
        sum += dot;
        sumSq += dot * dot;
        tools++;
      }
    }
    if (tools < MIN_REFERENCE_DOCS) return undefined;
    const mean = sum / tools;
    const sd = Math.sqrt(Math.max(1e-12, sumSq / tools - mean * mean));
    for (let i = 0; i < n; i++) z[i] = (z[i]! - mean) / sd;
    return new RequestScores(docs, z, tools);
  }

  /** Documents whose vectors have `dims` dimensions (a model change leaves others out until re-embedded). */
  private scoredDocs(dims: number): ScoredDocs {
    if (!this.scored || this.scored.dims !== dims) {
      const withVectors = [...this.docs].filter(([, d]) => d.vector?.length === dims);
      const scanner = dotScanner(withVectors.length, dims);
      withVectors.forEach(([, d], i) => scanner.matrix.set(d.vector!, i * dims));
      const keys = withVectors.map(([k]) => k);
      this.scored = {
        keys,
        dims,
        scanner,
        row: new Map(keys.map((k, i) => [k, i])),
        tool: Uint8Array.from(keys, (k) => (k.startsWith('t:') ? 1 : 0)),
        kind: Uint8Array.from(keys, (k) => k.charCodeAt(0)),
      };
    }
    return this.scored;
  }

  private async fill(): Promise<void> {
    const missing = (): [string, DocState][] => [...this.docs].filter(([, d]) => !d.vector);
    const attach = (key: string, doc: DocState, vector: Float32Array): void => {
      // The document may have changed while its vector was being made.
      if (this.docs.get(key) === doc) {
        if (!doc.vector) this.waiting--;
        doc.vector = vector;
        this.scored = undefined;
      }
    };
    let todo = missing();
    for (const [key, d] of todo) {
      const cached = this.semantic.vectors.get(`${d.scope}:${d.hash}`);
      if (cached) attach(key, d, cached);
    }
    todo = missing();
    const stored = todo.length ? await this.semantic.stored(todo.map(([, d]) => d)) : new Map<string, Float32Array>();
    for (const [key, d] of todo) {
      const v = stored.get(`${d.scope}:${d.hash}`);
      if (!v) continue;
      this.semantic.vectors.set(`${d.scope}:${d.hash}`, v);
      attach(key, d, v);
    }
    todo = missing();
    for (let i = 0; i < todo.length; i += FILL_CHUNK) {
      const chunk = todo.slice(i, i + FILL_CHUNK);
      const vectors = await this.semantic.embedAndStore(chunk.map(([, d]) => d));
      chunk.forEach(([key, d], j) => attach(key, d, vectors[j]!));
    }
    // Complete: what the organisation's documents use is known, the rest of its rows can go.
    if (this.waiting === 0) {
      const own = new Set([...this.docs.values()].filter((d) => d.scope === this.orgId).map((d) => d.hash));
      await this.semantic.prune(this.orgId, own).catch((err: unknown) => {
        this.semantic.log.warn(
          { orgId: this.orgId, err: (err as Error).message },
          'discovery: pruning stored embeddings failed',
        );
      });
    }
  }
}

export { SHARED_SCOPE };
