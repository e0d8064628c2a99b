/**
 * A bounded per-process memo with a time to live. Hot paths (trigger calls, the gateway)
 * read rarely-changing records through it; the process that changes a record forgets it at
 * once, other processes see the change within the TTL (the same bound as key revocation,
 * REVOCATION_CACHE_MS). Concurrent misses for one key share one load. Forgetting a key while
 * its load is in flight drops that load: its callers still get what it read, but it is not
 * kept, and the next get loads afresh (a load that started before a change may have read the
 * old record; keeping it would undo the forget for a whole TTL).
 */
export class TtlMemo<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    if (this.ttlMs <= 0) return load();
    const hit = this.entries.get(key);
    if (hit && hit.until > Date.now()) return hit.value;
    const inflight = this.loading.get(key);
    if (inflight) return inflight;
    const started: Promise<V> = load().then(
      (value) => {
        // Forgotten meanwhile (delete, deletePrefix, clear): not kept.
        if (this.loading.get(key) !== started) return value;
        this.loading.delete(key);
        if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
        this.entries.set(key, { value, until: Date.now() + this.ttlMs });
        return value;
      },
      (err: unknown) => {
        if (this.loading.get(key) === started) this.loading.delete(key);
        throw err;
      },
    );
    this.loading.set(key, started);
    return started;
  }

  delete(key: string): void {
    this.entries.delete(key);
    this.loading.delete(key);
  }

  /** Forgets every entry whose key starts with `prefix` (e.g. one organisation's). */
  deletePrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
    for (const key of this.loading.keys()) if (key.startsWith(prefix)) this.loading.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.loading.clear();
  }
}
