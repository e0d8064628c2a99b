/**
 * The listing cache of application servers' tool lists (src/gateway/upstream/listings.ts):
 * fresh lists are served as they are; an old or failed one is served at once, stale, while one
 * refresh runs; the first list is waited for within the budget only, and only by the first
 * caller; a failure keeps the last good tools with the error and is retried at most every 10 s.
 */
import { expect } from 'chai';
import { ToolListings } from '../../../src/gateway/upstream/listings.js';
import type { ToolDef } from '../../../src/gateway/types.js';

const tool = (name: string): ToolDef => ({
  name,
  description: name,
  inputSchema: { type: 'object', properties: {}, required: [] },
});
const never = () => new Promise<ToolDef[]>(() => undefined);

describe('gateway: tool listing cache', () => {
  it('serves a fresh list without asking again', async () => {
    const l = new ToolListings({ freshMs: 60_000, budgetMs: 50 });
    let asked = 0;
    const fetch = async () => {
      asked++;
      return [tool('a')];
    };
    expect(await l.get('o\u0000s', fetch)).to.deep.equal({ tools: [tool('a')], stale: false });
    expect(await l.get('o\u0000s', fetch)).to.deep.equal({ tools: [tool('a')], stale: false });
    expect(asked).to.equal(1);
  });

  it('waits for a first list at most the budget, once; later callers do not wait', async () => {
    const l = new ToolListings({ freshMs: 60_000, budgetMs: 50 });
    let t0 = performance.now();
    const first = await l.get('o\u0000hang', never);
    expect(performance.now() - t0).to.be.within(40, 500);
    expect(first.tools).to.deep.equal([]);
    expect(first).to.include({ stale: true });
    expect(first.error).to.match(/has not listed its tools yet \(no answer within 50 ms/);
    t0 = performance.now();
    await l.get('o\u0000hang', never);
    expect(performance.now() - t0).to.be.below(20);
  });

  it('keeps the last good tools, stale with the error, when a refresh fails; an old list is served at once while it refreshes', async () => {
    const l = new ToolListings({ freshMs: 60_000, budgetMs: 50 });
    const now = Date.now();
    await l.get('o\u0000s', async () => [tool('a')], now);
    // Past the fresh window: served at once (stale), refreshed in the background, which fails.
    let release!: () => void;
    const failing = () =>
      new Promise<ToolDef[]>((_resolve, reject) => {
        release = () => reject(new Error('upstream down'));
      });
    const old = await l.get('o\u0000s', failing, now + 120_000);
    expect(old).to.deep.equal({ tools: [tool('a')], stale: true });
    release();
    await new Promise((r) => setTimeout(r, 5));
    const failed = await l.get('o\u0000s', failing, Date.now());
    expect(failed).to.deep.equal({ tools: [tool('a')], stale: true, error: 'upstream down' });
    // Within the retry window the failed upstream is not asked again; after a success the list is fresh.
    let asked = 0;
    await l.get(
      'o\u0000s',
      async () => {
        asked++;
        return [tool('b')];
      },
      Date.now(),
    );
    expect(asked).to.equal(0);
    await l.get(
      'o\u0000s',
      async () => {
        asked++;
        return [tool('b')];
      },
      Date.now() + 11_000,
    );
    await new Promise((r) => setTimeout(r, 5));
    expect(asked).to.equal(1);
    expect(await l.get('o\u0000s', never)).to.deep.equal({ tools: [tool('b')], stale: false });
  });

  it("forgets an organisation's lists", async () => {
    const l = new ToolListings({ freshMs: 60_000, budgetMs: 10 });
    await l.get('org1\u0000s', async () => [tool('a')]);
    l.forgetOrg('org1');
    expect((await l.get('org1\u0000s', never)).tools).to.deep.equal([]);
  });

  it("turns the organisation's generation when a list arrives after the budget or changes, not when it stays the same", async () => {
    const l = new ToolListings({ freshMs: 60_000, budgetMs: 20 });
    expect(l.generation('o')).to.equal(0);
    let answer!: (tools: ToolDef[]) => void;
    const slow = () =>
      new Promise<ToolDef[]>((resolve) => {
        answer = resolve;
      });
    // The first caller gives up after the budget: discovery indexes no tools for it yet.
    expect((await l.get('o\u0000slow', slow)).tools).to.deep.equal([]);
    const before = l.generation('o');
    answer([tool('late')]);
    await new Promise((r) => setTimeout(r, 5));
    const arrived = l.generation('o');
    expect(arrived, 'a late first list turns the generation').to.be.above(before);
    expect(l.generation('other'), 'other organisations keep theirs').to.equal(0);
    // The same tools again (a refresh past the fresh window): no change.
    await l.get('o\u0000slow', async () => [tool('late')], Date.now() + 120_000);
    await new Promise((r) => setTimeout(r, 5));
    expect(l.generation('o')).to.equal(arrived);
    // Other tools: a change.
    await l.get('o\u0000slow', async () => [tool('late'), tool('new')], Date.now() + 240_000);
    await new Promise((r) => setTimeout(r, 5));
    expect(l.generation('o')).to.be.above(arrived);
  });
  it('health: unknown before any list, fresh, stale past the window, failing with the last error of any connection', async () => {
    const l = new ToolListings({ freshMs: 1000, budgetMs: 50 });
    expect(l.health('o\u0000s@1\u0000')).to.deep.equal({ status: 'unknown', lastListedAt: null, lastError: null });
    await l.get('o\u0000s@1\u0000\u0000c1', async () => [tool('a')]);
    const fresh = l.health('o\u0000s@1\u0000');
    expect(fresh.status).to.equal('fresh');
    expect(Date.parse(fresh.lastListedAt!)).to.be.closeTo(Date.now(), 1000);
    expect(l.health('o\u0000s@1\u0000', Date.now() + 5000).status).to.equal('stale');
    // Another organisation's or version's lists do not count.
    expect(l.health('p\u0000s@1\u0000').status).to.equal('unknown');
    expect(l.health('o\u0000s@2\u0000').status).to.equal('unknown');
    await l.get('o\u0000s@1\u0000\u0000c2', async () => {
      throw new Error('HTTP 502');
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(l.health('o\u0000s@1\u0000')).to.deep.include({ status: 'failing', lastError: 'HTTP 502' });
  });
  it('healthBy: one walk gives each group its own health; keys left out count for none', async () => {
    const l = new ToolListings({ freshMs: 1000, budgetMs: 50 });
    await l.get('o\u0000s@1\u0000\u0000c1', async () => [tool('a')]);
    await l.get('o\u0000t@1\u0000\u0000c1', async () => {
      throw new Error('HTTP 503');
    });
    await l.get('p\u0000s@1\u0000\u0000c1', async () => [tool('a')]);
    await new Promise((r) => setTimeout(r, 10));
    const byServer = l.healthBy((key) =>
      key.startsWith('o\u0000') ? key.slice(0, key.indexOf('\u0000', 2) + 1) : undefined,
    );
    expect([...byServer.keys()].sort()).to.deep.equal(['o\u0000s@1\u0000', 'o\u0000t@1\u0000']);
    expect(byServer.get('o\u0000s@1\u0000')!.status).to.equal('fresh');
    expect(byServer.get('o\u0000t@1\u0000')).to.deep.include({ status: 'failing', lastError: 'HTTP 503' });
    expect(l.healthBy(() => undefined).size).to.equal(0);
  });
});
