/**
 * One memory budget for every contained process that runs tenant code (TENANT_MEMORY_MB,
 * README.md "Memory budget"): code runners (src/engine/sandbox) and browser boxes (src/browser) together. Memory,
 * not a count of processes, bounds how many of them live at once. A process is admitted with the
 * memory it is expected to need; when the budget would be passed, idle processes of any kind are
 * evicted, least recently used first, until it fits. A process in use is never evicted: when no
 * idle one is left, the new process is not admitted and its caller waits or says why.
 *
 * The budget counts what each owner reports of its processes (`setBytes`, from its own
 * measurements, e.g. the proportional set size of a runner's tree) or, until then, the expected
 * size given at admission; a measurement that takes the budget past its total evicts idle members
 * (least recently used first) until it fits again. An evicted member's memory is counted free at
 * once: its owner kills it (SIGKILL to the whole tree) in `evict`.
 */
import { tenantMemoryEvictions } from '../kernel/metrics.js';

export type BudgetKind = 'runner' | 'browser';

/** One admitted process, as its owner sees it. */
export interface BudgetMember {
  readonly kind: BudgetKind;
  /** The organisation it serves (undefined: a spare, bound to nobody yet). */
  orgId: string | undefined;
  /** The memory counted for it now: the last measurement, or the expected size until then. */
  readonly bytes: number;
  /** Its memory as its owner last measured it (past the total: idle members are evicted until it fits). */
  setBytes(bytes: number): void;
  /** In use (never evicted) / idle (evictable, least recently used first). */
  busy(): void;
  idle(): void;
  /** The process is gone: its memory is free. Idempotent. */
  release(): void;
}

interface Entry {
  kind: BudgetKind;
  orgId: string | undefined;
  bytes: number;
  /** When it became idle (a monotonic counter); undefined while busy. */
  idleSince: number | undefined;
  evict: () => void;
  gone: boolean;
}

export interface BudgetStats {
  totalBytes: number;
  usedBytes: number;
  members: number;
  idle: number;
  evictions: number;
  refusals: number;
}

export class MemoryBudget {
  private readonly entries = new Set<Entry>();
  private clock = 0;
  private evictions = 0;
  private refusals = 0;

  constructor(readonly totalBytes: number) {}

  /**
   * Admits a process expected to need `expectedBytes`, evicting idle members (least recently
   * used first, any kind) as far as needed; `evict` stops this member's process if it is evicted
   * later. Undefined when it does not fit even with every idle member evicted (nothing is evicted
   * then). A member starts busy.
   */
  admit(
    kind: BudgetKind,
    { orgId, expectedBytes, evict }: { orgId: string | undefined; expectedBytes: number; evict: () => void },
  ): BudgetMember | undefined {
    if (!this.makeRoom(expectedBytes)) {
      this.refusals += 1;
      return undefined;
    }
    const entry: Entry = { kind, orgId, bytes: expectedBytes, idleSince: undefined, evict, gone: false };
    this.entries.add(entry);
    const release = () => {
      entry.gone = true;
      this.entries.delete(entry);
    };
    return {
      kind,
      get bytes() {
        return entry.gone ? 0 : entry.bytes;
      },
      get orgId() {
        return entry.orgId;
      },
      set orgId(v: string | undefined) {
        entry.orgId = v;
      },
      setBytes: (bytes) => {
        if (entry.gone || !Number.isFinite(bytes) || bytes < 0) return;
        entry.bytes = bytes;
        if (this.usedBytes() > this.totalBytes) this.makeRoom(0);
      },
      busy: () => {
        entry.idleSince = undefined;
      },
      idle: () => {
        if (!entry.gone) entry.idleSince = ++this.clock;
      },
      release,
    };
  }

  /**
   * Whether `bytes` more fit, evicting idle members least recently used first as far as needed.
   * Nothing is evicted when even all idle members would not make room.
   */
  makeRoom(bytes: number): boolean {
    let used = this.usedBytes();
    if (used + bytes <= this.totalBytes) return true;
    const idle = [...this.entries].filter((e) => e.idleSince !== undefined).sort((a, b) => a.idleSince! - b.idleSince!);
    const freeable = idle.reduce((sum, e) => sum + e.bytes, 0);
    // Measured sizes may pass the total (setBytes): then as much as can go goes.
    if (used - freeable + bytes > this.totalBytes && bytes > 0) return false;
    for (const e of idle) {
      if (used + bytes <= this.totalBytes) break;
      used -= e.bytes;
      e.gone = true;
      this.entries.delete(e);
      this.evictions += 1;
      tenantMemoryEvictions.inc();
      e.evict();
    }
    return true;
  }

  usedBytes(): number {
    let used = 0;
    for (const e of this.entries) used += e.bytes;
    return used;
  }

  stats(): BudgetStats {
    let idle = 0;
    for (const e of this.entries) if (e.idleSince !== undefined) idle += 1;
    return {
      totalBytes: this.totalBytes,
      usedBytes: this.usedBytes(),
      members: this.entries.size,
      idle,
      evictions: this.evictions,
      refusals: this.refusals,
    };
  }
}
