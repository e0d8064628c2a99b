/**
 * The objects of one runner connection, as the browser server announces them (relay.ts): the
 * server's DispatcherConnection sends `{"guid":<parent>,"method":"__create__","params":{"type",
 * "initializer","guid"}}` for each new object, `__adopt__` when it moves under another parent and
 * `__dispose__` when it is gone, which takes its children with it (a closed context's pages get
 * no message of their own). The relay needs each object's type, the interface its calls belong
 * to, and counts the live pages and contexts.
 *
 * The server → runner direction carries large payloads (screenshots, stream reads, downloads):
 * answers (`{"id":…`) and ordinary events are never parsed; only text that starts as one of the
 * three object messages is.
 */

/** Types the relay counts (relay.ts limits). */
export type Counted = 'Page' | 'BrowserContext';

interface Node {
  type: string;
  parent: string | undefined;
  children: Set<string>;
}

const PREFIX = Buffer.from('{"guid":"');
const OBJECT_METHOD = Buffer.from('","method":"__');
const QUOTE = 0x22;

const isCounted = (type: string): type is Counted => type === 'Page' || type === 'BrowserContext';

export class ObjectTable {
  /** The root object (guid ""), to which the runner sends Root.initialize. */
  private readonly nodes = new Map<string, Node>([['', { type: 'Root', parent: undefined, children: new Set() }]]);

  /** `count` hears of every counted object made (+1) and gone (-1). */
  constructor(private readonly count: (type: Counted, delta: 1 | -1) => void) {}

  typeOf(guid: unknown): string | undefined {
    return typeof guid === 'string' ? this.nodes.get(guid)?.type : undefined;
  }

  /**
   * Reads one server → runner text message; anything but an object message is left undecoded
   * (guids are server-made and never hold a quote, so the first quote after the prefix ends it).
   */
  observe(data: Buffer): void {
    if (data.length < PREFIX.length || data.compare(PREFIX, 0, PREFIX.length, 0, PREFIX.length) !== 0) return;
    const end = data.indexOf(QUOTE, PREFIX.length);
    if (end < 0 || end + OBJECT_METHOD.length > data.length) return;
    if (data.compare(OBJECT_METHOD, 0, OBJECT_METHOD.length, end, end + OBJECT_METHOD.length) !== 0) return;
    let msg: { guid?: unknown; method?: unknown; params?: { type?: unknown; guid?: unknown } };
    try {
      msg = JSON.parse(data.toString()) as typeof msg;
    } catch {
      return;
    }
    const { guid, method, params } = msg;
    if (typeof guid !== 'string') return;
    if (method === '__create__' && typeof params?.guid === 'string' && typeof params.type === 'string') {
      this.add(guid, params.guid, params.type);
    } else if (method === '__adopt__' && typeof params?.guid === 'string') {
      this.adopt(guid, params.guid);
    } else if (method === '__dispose__') {
      this.remove(guid);
    }
  }

  /** The connection ended: every object of it is gone. */
  clear(): void {
    for (const node of this.nodes.values()) if (isCounted(node.type)) this.count(node.type, -1);
    this.nodes.clear();
  }

  private add(parent: string, guid: string, type: string): void {
    if (this.nodes.has(guid)) return;
    this.nodes.set(guid, { type, parent, children: new Set() });
    this.nodes.get(parent)?.children.add(guid);
    if (isCounted(type)) this.count(type, 1);
  }

  private adopt(parent: string, guid: string): void {
    const node = this.nodes.get(guid);
    if (!node) return;
    if (node.parent !== undefined) this.nodes.get(node.parent)?.children.delete(guid);
    node.parent = parent;
    this.nodes.get(parent)?.children.add(guid);
  }

  private remove(guid: string): void {
    const node = this.nodes.get(guid);
    if (!node) return;
    this.nodes.delete(guid);
    if (node.parent !== undefined) this.nodes.get(node.parent)?.children.delete(guid);
    for (const child of node.children) this.remove(child);
    if (isCounted(node.type)) this.count(node.type, -1);
  }
}

export interface Limits {
  pages: number;
  contexts: number;
}

interface TargetUsage {
  pages: number;
  contexts: number;
  /** Past a limit: onLimit was called, its traffic stops. */
  limited: boolean;
  /** Ends each runner connection to the target. */
  ends: Set<() => void>;
}

/**
 * The live pages and browser contexts of each browser (a target: its server's endpoint), over
 * every runner connection to it. The first time a count goes above its limit, `onLimit` is told
 * once and every connection to that browser is ended.
 */
export class UsageCounter {
  private readonly byTarget = new Map<string, TargetUsage>();

  constructor(
    private readonly limits: Limits | undefined,
    private readonly onLimit: (target: string, reason: string, kind: 'pages' | 'contexts') => void,
  ) {}

  counts(target: string): { pages: number; contexts: number } {
    const u = this.byTarget.get(target);
    return { pages: u?.pages ?? 0, contexts: u?.contexts ?? 0 };
  }

  limited(target: string): boolean {
    return this.byTarget.get(target)?.limited ?? false;
  }

  /**
   * A runner connection to `target`; `end` closes it. Answers its count callback (for its
   * ObjectTable), whether its browser went over a limit, and its leave.
   */
  join(
    target: string,
    end: () => void,
  ): { count: (type: Counted, delta: 1 | -1) => void; limited: () => boolean; leave: () => void } {
    let u = this.byTarget.get(target);
    if (!u) {
      u = { pages: 0, contexts: 0, limited: false, ends: new Set() };
      this.byTarget.set(target, u);
    }
    const usage = u;
    usage.ends.add(end);
    return {
      count: (type, delta) => {
        if (type === 'Page') usage.pages += delta;
        else usage.contexts += delta;
        if (delta > 0) this.check(target, usage);
      },
      limited: () => usage.limited,
      leave: () => {
        usage.ends.delete(end);
        if (usage.ends.size === 0 && !usage.limited && this.byTarget.get(target) === usage)
          this.byTarget.delete(target);
      },
    };
  }

  /** The browser is gone: a new one at the same endpoint starts from nothing. */
  forget(target: string): void {
    this.byTarget.delete(target);
  }

  private check(target: string, u: TargetUsage): void {
    if (u.limited || !this.limits) return;
    const kind = u.pages > this.limits.pages ? 'pages' : u.contexts > this.limits.contexts ? 'contexts' : undefined;
    if (!kind) return;
    u.limited = true;
    this.onLimit(
      target,
      kind === 'pages'
        ? `more than ${this.limits.pages} pages open at once`
        : `more than ${this.limits.contexts} browser contexts open at once`,
      kind,
    );
    // Ended after the message being read: the table that counted it is still in use.
    queueMicrotask(() => {
      for (const end of [...u.ends]) end();
    });
  }
}
