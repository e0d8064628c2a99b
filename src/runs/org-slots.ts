/**
 * How many runs of each organisation this process is executing, against RUN_ORG_CONCURRENCY
 * (README.md "Sharing the run slots"). A run holds its organisation's slot from its claim (or its
 * adoption by a synchronous call) until its steps are done; its finish commits without it. The
 * claims read `budget()` to leave out the organisations at their cap, so one organisation's
 * backlog never takes every slot of the process.
 */
export class OrgSlots {
  private readonly executing = new Map<string, number>();

  /**
   * `cap`: runs of one organisation at once; `slots`: runs of all organisations at once
   * (RUN_CONCURRENCY). A cap of at least `slots` never binds.
   */
  constructor(
    readonly cap: number,
    private readonly slots: number,
  ) {}

  /** True when the cap can bind: the claims must then leave out the organisations at it. */
  get binding(): boolean {
    return this.cap < this.slots;
  }

  /** Runs of `orgId` executing here. */
  count(orgId: string): number {
    return this.executing.get(orgId) ?? 0;
  }

  full(orgId: string): boolean {
    return this.binding && this.count(orgId) >= this.cap;
  }

  /** Takes a slot of `orgId` if it has one free: false when it is at its cap. */
  tryTake(orgId: string): boolean {
    if (this.full(orgId)) return false;
    this.take(orgId);
    return true;
  }

  /** A run of `orgId` was claimed (the claim respected `budget()`). */
  take(orgId: string): void {
    this.executing.set(orgId, this.count(orgId) + 1);
  }

  /** A run of `orgId` is done executing: true when its organisation was at its cap until now. */
  give(orgId: string): boolean {
    const n = this.count(orgId);
    if (n <= 1) this.executing.delete(orgId);
    else this.executing.set(orgId, n - 1);
    return this.binding && n === this.cap;
  }

  /**
   * The slots each organisation executing here has left (0: at its cap), as the claim statements
   * take them (a JSON object, org id → slots left); an organisation not in it has `cap` left.
   */
  budget(): Record<string, number> {
    const left: Record<string, number> = {};
    for (const [orgId, n] of this.executing) left[orgId] = Math.max(0, this.cap - n);
    return left;
  }
}
