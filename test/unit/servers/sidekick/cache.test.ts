// One index per organisation, rebuilt (updated in place) only when the source's fingerprint
// changes (spec section 8; DESIGN.md section 5: lookups scoped by organisation).
import { expect } from 'chai';
import type { CatalogTool, DiscoverySource, GatewayContext } from '../../../../src/gateway/types.js';
import {
  createDiscoveryEngine,
  createMemorySource,
  createSidekickServer,
  type DiscoverResult,
} from '../../../../src/servers/sidekick/index.js';
import { appServer, appTools, context } from './fixtures.js';

/** Wraps a source and counts how often the data (not the fingerprint) is read. */
function counting(inner: DiscoverySource): DiscoverySource & { reads: number } {
  const counted = {
    reads: 0,
    fingerprint: (ctx: GatewayContext) => inner.fingerprint(ctx),
    tools: (ctx: GatewayContext) => {
      counted.reads++;
      return inner.tools(ctx);
    },
    connections: (ctx: GatewayContext) => inner.connections(ctx),
    resources: (ctx: GatewayContext) => inner.resources(ctx),
  };
  return counted;
}

const zoom = appServer('zoom', 'Zoom', 'Video meetings.', [
  ['zoom_create_meeting', 'Schedule a Zoom meeting and get its join link.', { topic: 'Topic' }],
]);
const names = (r: DiscoverResult): string[] => r.tools.map((t) => t.name);

describe('svc-sidekick index cache', () => {
  it('reads the source once while the fingerprint is unchanged', async () => {
    const source = counting(createMemorySource({ tools: appTools }));
    const engine = createDiscoveryEngine(source, { skills: [] });
    await Promise.all([1, 2, 3].map(() => engine.discover(context(), { request: 'send a slack message' })));
    await engine.discover(context(), { request: 'find unpaid invoices' });
    expect(source.reads).to.equal(1);
  });

  it('a fingerprint change re-reads the source: an added tool is found, a removed one is gone', async () => {
    const source = createMemorySource({ tools: appTools });
    const engine = createDiscoveryEngine(source, { skills: [] });
    expect(names(await engine.discover(context(), { request: 'schedule a zoom meeting' }))).to.not.include(
      'zoom_create_meeting',
    );
    source.set({ tools: [...appTools, ...zoom] });
    expect(names(await engine.discover(context(), { request: 'schedule a zoom meeting' }))[0]).to.equal(
      'zoom_create_meeting',
    );
    source.set({ tools: appTools.filter((t) => t.tool.name !== 'slack_send_message') });
    const r = await engine.discover(context(), { request: 'send a slack message' });
    expect(names(r)).to.not.include('slack_send_message');
    expect(names(r)).to.not.include('zoom_create_meeting');
  });

  it('a changed tool is re-indexed under its new description', async () => {
    const source = createMemorySource({ tools: appTools });
    const engine = createDiscoveryEngine(source, { skills: [] });
    const changed: CatalogTool[] = appTools.map((t) =>
      t.tool.name === 'stripe_create_refund'
        ? { ...t, tool: { ...t.tool, description: 'Give a customer their money back for a chargeback.' } }
        : t,
    );
    await engine.discover(context(), { request: 'x' });
    source.set({ tools: changed });
    expect(names(await engine.discover(context(), { request: 'give the customer their money back' }))[0]).to.equal(
      'stripe_create_refund',
    );
    const [detail] = (await engine.details(context(), { items: ['stripe_create_refund'] })).items;
    expect(detail!.description).to.match(/money back/);
  });

  it('keeps organisations apart', async () => {
    const source = createMemorySource({ tools: appTools });
    source.set({ tools: [...appTools, ...zoom] }, 'org_b');
    const engine = createDiscoveryEngine(source, { skills: [] });
    expect(names(await engine.discover(context('org_a'), { request: 'zoom meeting' }))).to.not.include(
      'zoom_create_meeting',
    );
    expect(names(await engine.discover(context('org_b'), { request: 'zoom meeting' }))).to.include(
      'zoom_create_meeting',
    );
    expect((await engine.details(context('org_a'), { items: ['zoom_create_meeting'] })).notFound).to.deep.equal([
      'zoom_create_meeting',
    ]);
  });

  it('drops the least recently used organisation beyond maxOrgs', async () => {
    const source = counting(createMemorySource({ tools: appTools }));
    const engine = createDiscoveryEngine(source, { skills: [], maxOrgs: 2 });
    for (const org of ['o1', 'o2', 'o1', 'o3']) await engine.discover(context(org), { request: 'slack' });
    expect(source.reads).to.equal(3);
    await engine.discover(context('o1'), { request: 'slack' }); // still cached (recently used)
    expect(source.reads).to.equal(3);
    await engine.discover(context('o2'), { request: 'slack' }); // was evicted
    expect(source.reads).to.equal(4);
  });

  it('a failed build is not cached: the next call tries again', async () => {
    const inner = createMemorySource({ tools: appTools });
    let fail = true;
    const source: DiscoverySource = {
      ...inner,
      tools: async (ctx) => {
        if (fail) throw new Error('registry down');
        return inner.tools(ctx);
      },
    };
    const engine = createDiscoveryEngine(source, { skills: [] });
    let error: unknown;
    await engine.discover(context(), { request: 'slack' }).catch((err: unknown) => (error = err));
    expect(String(error)).to.contain('registry down');
    fail = false;
    expect(names(await engine.discover(context(), { request: 'send a slack message' }))[0]).to.equal(
      'slack_send_message',
    );
  });

  it('servers built on one engine share its indexes', async () => {
    const source = counting(createMemorySource({ tools: appTools }));
    const engine = createDiscoveryEngine(source, { skills: [] });
    const a = createSidekickServer(source, { engine });
    const b = createSidekickServer(source, { engine });
    await a.callTool(context(), 'capabilities_discover', { request: 'slack' });
    await b.callTool(context(), 'capability_details', { items: ['slack_send_message'] });
    expect(source.reads).to.equal(1);
  });

  describe('when only the refresh part of the fingerprint turns (stale-while-revalidate)', () => {
    /** A source whose fingerprint is `data#refresh` and whose tool reads can be held back. */
    function controlled() {
      const state = { data: 'v1', refresh: 1, tools: appTools, hold: undefined as Promise<void> | undefined, reads: 0 };
      const source: DiscoverySource = {
        fingerprint: () => Promise.resolve(`${state.data}#${state.refresh}`),
        tools: async () => {
          state.reads++;
          const tools = state.tools;
          if (state.hold) await state.hold;
          return tools;
        },
        connections: () => Promise.resolve([]),
        resources: () => Promise.resolve([]),
      };
      return { state, source };
    }

    it('serves the built index at once while one rebuild runs in the background, then the new one', async () => {
      const { state, source } = controlled();
      const engine = createDiscoveryEngine(source, { skills: [] });
      await engine.discover(context(), { request: 'x' });
      let release!: () => void;
      state.hold = new Promise((r) => {
        release = r;
      });
      state.tools = [...appTools, ...zoom];
      state.refresh = 2;
      // The rebuild hangs on the source; callers are answered from the previous index, at once.
      const answers = await Promise.all(
        [1, 2, 3].map(() => engine.discover(context(), { request: 'schedule a zoom meeting' })),
      );
      for (const a of answers) expect(names(a)).to.not.include('zoom_create_meeting');
      expect(state.reads).to.equal(2);
      release();
      await new Promise((r) => setTimeout(r, 10));
      expect(names(await engine.discover(context(), { request: 'schedule a zoom meeting' }))[0]).to.equal(
        'zoom_create_meeting',
      );
      expect(state.reads).to.equal(2);
    });

    it('a change of the data part is waited for (registrations show at once)', async () => {
      const { state, source } = controlled();
      const engine = createDiscoveryEngine(source, { skills: [] });
      await engine.discover(context(), { request: 'x' });
      state.tools = [...appTools, ...zoom];
      state.data = 'v2';
      expect(names(await engine.discover(context(), { request: 'schedule a zoom meeting' }))[0]).to.equal(
        'zoom_create_meeting',
      );
    });

    it('a failed background rebuild keeps the previous index and is tried again', async () => {
      const { state, source } = controlled();
      const engine = createDiscoveryEngine(source, { skills: [] });
      await engine.discover(context(), { request: 'x' });
      let fail = true;
      const read = source.tools.bind(source);
      source.tools = async (ctx) => {
        if (fail) throw new Error('upstream down');
        return read(ctx);
      };
      state.tools = [...appTools, ...zoom];
      state.refresh = 2;
      expect(names(await engine.discover(context(), { request: 'send a slack message' }))).to.include(
        'slack_send_message',
      );
      await new Promise((r) => setTimeout(r, 10));
      fail = false;
      await engine.discover(context(), { request: 'x' });
      await new Promise((r) => setTimeout(r, 10));
      expect(names(await engine.discover(context(), { request: 'schedule a zoom meeting' }))[0]).to.equal(
        'zoom_create_meeting',
      );
    });
  });
});
