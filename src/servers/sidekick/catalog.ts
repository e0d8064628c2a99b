/**
 * What discovery knows about one organisation (spec section 8): its tools in a BM25+
 * index (search.ts, postings.ts) that is updated in place when the source's fingerprint changes (only added, removed
 * or changed tools are re-indexed), and small indexes over its connections and resources,
 * which are cheap enough to rebuild on every change.
 */
import type { CatalogConnection, CatalogResource, CatalogTool } from '../../gateway/index.js';
import { TermIndex, type FieldSpec } from './search.js';

/** Field boosts (BM25) and coverage quality of the tool index. Name words weigh most. */
const TOOL_FIELDS: Record<string, FieldSpec> = {
  name: { boost: 3, quality: 1 },
  title: { boost: 2, quality: 1 },
  summary: { boost: 1.5, quality: 0.9 },
  details: { boost: 0.5, quality: 0.5 },
  server: { boost: 1.5, quality: 0.9 },
  serverDescription: { boost: 0.3, quality: 0.4 },
  params: { boost: 0.4, quality: 0.3 },
};

export interface ToolEntry {
  id: number;
  /** Replaced in place when the source returns an equal copy. */
  tool: CatalogTool;
  /** JSON of the catalog entry: a change re-indexes the tool. */
  signature: string;
}

/** Parameter names and descriptions, without the PCID every application tool has. */
function paramsText(tool: CatalogTool): string {
  const props = tool.tool.inputSchema.properties ?? {};
  const parts: string[] = [];
  for (const [name, schema] of Object.entries(props)) {
    if (name === 'PCID') continue;
    const description = (schema as { description?: unknown } | null)?.description;
    parts.push(name, typeof description === 'string' ? description : '');
  }
  return parts.join(' ');
}

/** The end of a description's first sentence, or of its first paragraph if that comes first. */
const SUMMARY_END = /[.!?](?=\s)|\n\s*\n/u;

/**
 * A description's summary (its first sentence) and the rest. Authors say first what a tool
 * does; the rest (usage notes, examples, caveats) mentions many other things, so a word found
 * only there says less: `details` has a low boost and a low coverage quality.
 */
export function splitDescription(description: string): [summary: string, details: string] {
  const text = description.trim();
  const m = SUMMARY_END.exec(text);
  return m ? [text.slice(0, m.index + 1), text.slice(m.index + 1)] : [text, ''];
}

function toolText(entry: ToolEntry, field: string): string {
  const t = entry.tool;
  switch (field) {
    case 'name':
      return t.tool.name;
    case 'title':
      return t.tool.title ?? '';
    case 'summary':
      return splitDescription(t.tool.description)[0];
    case 'details':
      return splitDescription(t.tool.description)[1];
    case 'server':
      return `${t.serverTitle} ${t.server} ${t.serviceKey ?? ''}`;
    case 'serverDescription':
      return t.serverDescription;
    case 'params':
      return paramsText(t);
    default:
      return '';
  }
}

const toolKey = (t: CatalogTool): string => `${t.server}\u0000${t.tool.name}`;

export interface UpdateStats {
  added: number;
  removed: number;
  changed: number;
}

/** The tools of an organisation: index plus lookups by id and by name. */
export class ToolCatalog {
  readonly index = new TermIndex<ToolEntry>(TOOL_FIELDS, toolText);
  private readonly byKey = new Map<string, ToolEntry>();
  readonly byId = new Map<number, ToolEntry>();
  /** Lower-cased tool name → entries (a name may exist on several servers). */
  readonly byName = new Map<string, ToolEntry[]>();
  private nextId = 1;

  /** Brings the index in line with `tools`, touching only what changed. */
  update(tools: readonly CatalogTool[]): UpdateStats {
    const stats: UpdateStats = { added: 0, removed: 0, changed: 0 };
    const seen = new Set<string>();
    for (const tool of tools) {
      const key = toolKey(tool);
      if (seen.has(key)) continue;
      seen.add(key);
      const old = this.byKey.get(key);
      // Same object as last time: unchanged, without paying for its JSON.
      if (old && old.tool === tool) continue;
      const signature = JSON.stringify(tool);
      if (old && old.signature === signature) {
        old.tool = tool;
        continue;
      }
      if (old) {
        this.drop(key, old);
        stats.changed++;
      } else stats.added++;
      this.put(key, { id: this.nextId++, tool, signature });
    }
    for (const [key, entry] of this.byKey) {
      if (seen.has(key)) continue;
      this.drop(key, entry);
      stats.removed++;
    }
    return stats;
  }

  get size(): number {
    return this.byKey.size;
  }

  entries(): IterableIterator<ToolEntry> {
    return this.byKey.values();
  }

  private put(key: string, entry: ToolEntry): void {
    this.byKey.set(key, entry);
    this.byId.set(entry.id, entry);
    const name = entry.tool.tool.name.toLowerCase();
    this.byName.set(name, [...(this.byName.get(name) ?? []), entry]);
    this.index.add(entry);
  }

  private drop(key: string, entry: ToolEntry): void {
    this.index.remove(entry.id);
    this.byKey.delete(key);
    this.byId.delete(entry.id);
    const name = entry.tool.tool.name.toLowerCase();
    const rest = (this.byName.get(name) ?? []).filter((e) => e !== entry);
    if (rest.length) this.byName.set(name, rest);
    else this.byName.delete(name);
  }
}

/** Words users say for each resource type (spec section 14 resources), indexed with the type. */
const RESOURCE_TYPE_WORDS: Record<string, string> = {
  datastore: 'datastore data store database table records rows items memory',
  filestore: 'filestore filestorage files file storage documents uploads',
  filestorage: 'filestore filestorage files file storage documents uploads',
  'knowledge-base': 'knowledge base documents articles answers search',
  knowledgebase: 'knowledge base documents articles answers search',
  vault: 'vault secrets passwords credentials keys',
};

export interface Indexed<T> {
  items: T[];
  index: TermIndex<{ id: number; item: T }>;
}

function smallIndex<T>(
  items: T[],
  fields: Record<string, FieldSpec>,
  text: (item: T, field: string) => string,
): Indexed<T> {
  const index = new TermIndex<{ id: number; item: T }>(fields, (d, f) => text(d.item, f));
  items.forEach((item, id) => index.add({ id, item }));
  return { items, index };
}

/**
 * Connections are matched on their name, their application (service key) and the display
 * names of the servers of that application (a "Slack" request finds the connection whose
 * service key is `slack` even when it is named "Acme workspace").
 */
export function indexConnections(
  connections: CatalogConnection[],
  appNames: ReadonlyMap<string, string>,
): Indexed<CatalogConnection> {
  return smallIndex(
    connections,
    {
      name: { boost: 2, quality: 1 },
      application: { boost: 2, quality: 1 },
    },
    (c, f) => (f === 'name' ? c.name : `${c.serviceKey} ${appNames.get(c.serviceKey) ?? ''}`),
  );
}

export function indexResources(resources: CatalogResource[]): Indexed<CatalogResource> {
  return smallIndex(
    resources,
    {
      name: { boost: 3, quality: 1 },
      type: { boost: 1, quality: 0.8 },
      description: { boost: 1, quality: 0.8 },
    },
    (r, f) => {
      if (f === 'name') return r.name;
      if (f === 'type') return RESOURCE_TYPE_WORDS[r.type.toLowerCase()] ?? r.type;
      return r.description ?? '';
    },
  );
}
