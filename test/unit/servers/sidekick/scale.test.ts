// A query over 10,000 indexed tools completes and stays correct (timing is measured by
// bench/discovery.ts, not asserted here).
import { expect } from 'chai';
import { CapabilitiesDiscoverOutput } from '../../../../generated/validators/schemas.js';
import {
  createMemorySource,
  createSidekickServer,
  type DiscoverResult,
} from '../../../../src/servers/sidekick/index.js';
import { context, manyTools, tools } from './fixtures.js';

describe('svc-sidekick at 10,000 tools', () => {
  it('indexes 10,000 tools and answers a query with valid, ranked results', async () => {
    const catalog = [...tools(), ...manyTools(10_000 - tools().length)];
    expect(catalog).to.have.length(10_000);
    const server = createSidekickServer(createMemorySource({ tools: catalog }), { skills: [] });
    for (const request of ['send a slack message', 'export invoices from product 42', 'find unpaid invoices']) {
      const res = await server.callTool(context(), 'capabilities_discover', { request, limit: 20 });
      const body = res.structuredContent as DiscoverResult;
      expect(CapabilitiesDiscoverOutput(body)).to.equal(true);
      expect(body.tools.length, request).to.be.above(0);
    }
    const slack = (await server.callTool(context(), 'capabilities_discover', { request: 'send a slack message' }))
      .structuredContent as DiscoverResult;
    expect(slack.tools[0]!.name).to.equal('slack_send_message');
    const product = (
      await server.callTool(context(), 'capabilities_discover', { request: 'export invoices from product42' })
    ).structuredContent as DiscoverResult;
    expect(product.tools[0]!.name).to.equal('product42_export_invoice');
  });
});
