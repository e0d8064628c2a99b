/**
 * A bounded per-process memo of values made from one organisation's own input (its schemas, its
 * step code, its model names). Every entry is keyed by the organisation first, so another
 * organisation's identical input is a miss: it pays the same work as any new input, and can never
 * tell by an answer's timing or content what another organisation used (README "Caches").
 * Least recently used entries go first beyond `max`; which organisation's entries go reveals
 * nothing of their content.
 */
import { LRUCache } from 'lru-cache';

export class OrgMemo<V extends NonNullable<unknown>> {
  private readonly entries: LRUCache<string, V>;

  constructor(max: number) {
    this.entries = new LRUCache<string, V>({ max });
  }

  /** The organisation's value for `key`, made with `make` on a miss (a throw is not kept). */
  get(orgId: string, key: string, make: () => V): V {
    const k = memoKey(orgId, key);
    let value = this.entries.get(k);
    if (value === undefined) {
      value = make();
      this.entries.set(k, value);
    }
    return value;
  }

  /** Entries held (tests). */
  get size(): number {
    return this.entries.size;
  }
}

/** The id's length first: no organisation id and key can spell another pair's entry. */
const memoKey = (orgId: string, key: string): string => `${orgId.length}:${orgId}\u0000${key}`;
