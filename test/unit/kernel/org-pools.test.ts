/**
 * Keep-alive pools per organisation (src/kernel/org-pools.ts; README "Caches"): calls made for
 * one organisation never travel on a connection another organisation's calls left open (the
 * saved handshake would show it, by timing, that someone called that origin lately), while an
 * organisation's own repeat calls reuse its connection. Both kinds of outbound call: the policy's
 * outboundRequest (event calls, operator file fetches) and orgFetches (workflow `http` steps).
 * A loopback server records which organisation each connection carried.
 */
import { expect } from 'chai';
import { recorder } from '../../helpers/connection-recorder.js';
import { OrgPools } from '../../../src/kernel/org-pools.js';
import { orgFetches, OutboundPolicy, outboundRequest, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';

describe('kernel: connections per organisation', () => {
  const policy = () => new OutboundPolicy(parseOutboundAllowlist('127.0.0.0/8'));

  it("outboundRequest: an organisation's calls reuse its own connection, never another organisation's", async () => {
    const r = await recorder();
    const p = policy();
    try {
      const call = (org: string) =>
        outboundRequest(
          `${r.url}?org=${org}`,
          { orgId: org, method: 'GET', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024 },
          p,
        );
      for (const org of ['org_a', 'org_a', 'org_b', 'org_a', 'org_b']) expect((await call(org)).status).to.equal(200);
      expect(r.carried.map((orgs) => [...orgs])).to.deep.equal([['org_a'], ['org_b']]);
    } finally {
      await r.close();
    }
  });

  it("orgFetches: an organisation's fetches reuse its own connection, never another organisation's", async () => {
    const r = await recorder();
    const fetches = orgFetches(policy());
    try {
      const calls = ['org_a', 'org_a', 'org_b', 'org_a', 'org_b', 'org_a'];
      for (const org of calls) {
        const res = await fetches.of(org)(`${r.url}?org=${org}`);
        expect(await res.text()).to.equal('ok');
      }
      // undici may open a second connection while the first is being handed back: the rule is
      // that no connection carries two organisations' calls, and that connections are reused.
      expect(r.carried.every((orgs) => orgs.size === 1)).to.equal(true);
      expect(new Set(r.carried.flatMap((orgs) => [...orgs]))).to.deep.equal(new Set(['org_a', 'org_b']));
      expect(r.carried.length).to.be.below(calls.length);
    } finally {
      fetches.close();
      await r.close();
    }
  });

  it('keeps at most `max` organisations, releasing the least recently used', () => {
    const released: string[] = [];
    let n = 0;
    const pools = new OrgPools(() => ({ id: `pool${++n}` }), { max: 2, release: (p) => released.push(p.id) });
    const a = pools.of('org_a');
    pools.of('org_b');
    expect(pools.of('org_a')).to.equal(a);
    pools.of('org_c');
    expect(released).to.deep.equal(['pool2']);
    expect(pools.of('org_b').id).to.equal('pool4');
  });
});
