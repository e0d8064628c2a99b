/**
 * Embedded servers declare their tools as a handler map typed from schemas/tools
 * (generated/tools/servers.ts `ToolHandlers`): the type requires one handler per tool, each
 * gets its tool's input type and answers its output type — `tsc --noEmit` checks the
 * `@ts-expect-error` lines below — and `embeddedServer` validates the arguments with the
 * generated validator before a handler runs, so a bad argument never reaches one.
 */
import { expect } from 'chai';
import type { EmbeddedServerPath, ToolHandlers, ToolTypes } from '../../../generated/tools/servers.js';
import {
  embeddedServer,
  GatewayError,
  jsonResult,
  toolError,
  type GatewayContext,
} from '../../../src/gateway/index.js';
import { context } from '../servers/sidekick/fixtures.js';

type Sidekick = ToolTypes['svc-sidekick'];
type Calls = { tool: string; args: unknown }[];

const noMatches: Sidekick['capabilities_discover']['output'] = {
  tools: [],
  connections: [],
  resources: [],
  skills: [],
};

/** svc-sidekick's two tools, each noting the arguments it was given. */
function recording(calls: Calls): ToolHandlers<'svc-sidekick', GatewayContext> {
  return {
    async capabilities_discover(args) {
      calls.push({ tool: 'capabilities_discover', args });
      return jsonResult(noMatches);
    },
    async capability_details(args) {
      calls.push({ tool: 'capability_details', args });
      return jsonResult({ items: [], notFound: args.items });
    },
  };
}

/** Type-level checks: compiled by `tsc --noEmit`, never called. */
export function typeChecks(): void {
  // @ts-expect-error capability_details has no handler
  const missing: ToolHandlers<'svc-sidekick', GatewayContext> = {
    capabilities_discover: async () => jsonResult(noMatches),
  };
  const extra: ToolHandlers<'mcp', GatewayContext> = {
    listServers: async () => jsonResult({ servers: [] }),
    // @ts-expect-error not a tool of schemas/tools/mcp
    listEverything: async () => jsonResult({ servers: [] }),
  };
  const typedInput: ToolHandlers<'svc-sidekick', GatewayContext> = {
    async capabilities_discover(args) {
      const request: string = args.request;
      // @ts-expect-error limit has a schema default the validator does not fill: it may be absent
      const limit: number = args.limit;
      // @ts-expect-error not an argument of capabilities_discover
      void args.query;
      void request;
      void limit;
      return jsonResult(noMatches);
    },
    // @ts-expect-error the answer lacks notFound, which capability_details.output requires
    async capability_details() {
      return jsonResult({ items: [] });
    },
  };
  // A tool's own failure answers any body.
  const failing: ToolHandlers<'mcp', GatewayContext> = { listServers: async () => toolError('no servers') };
  // @ts-expect-error coding-agent is an application-server template, not an embedded server
  const notEmbedded: EmbeddedServerPath = 'coding-agent';
  void [missing, extra, typedInput, failing, notEmbedded];
}

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a rejection');
}

describe('embedded servers: typed handler maps', () => {
  it('passes validated arguments to the tool named, as given (no defaults filled)', async () => {
    const calls: Calls = [];
    const server = embeddedServer('svc-sidekick', recording(calls));
    const result = await server.callTool(context(), 'capabilities_discover', { request: 'send a slack message' });
    expect(result.structuredContent).to.deep.equal(noMatches);
    await server.callTool(context(), 'capability_details', { items: ['slack_send_message'] });
    expect(calls).to.deep.equal([
      { tool: 'capabilities_discover', args: { request: 'send a slack message' } },
      { tool: 'capability_details', args: { items: ['slack_send_message'] } },
    ]);
  });

  it('never lets a bad argument reach a handler (-32000 naming the field)', async () => {
    const calls: Calls = [];
    const server = embeddedServer('svc-sidekick', recording(calls));
    const bad: [string, Record<string, unknown>, RegExp][] = [
      ['capabilities_discover', {}, /`request` is required/],
      ['capabilities_discover', { request: 42 }, /`request` must be string/],
      ['capabilities_discover', { request: 'x', limit: 'ten' }, /`limit`/],
      ['capabilities_discover', { request: 'x', types: ['tool', 'planet'] }, /`types\[1\]` must be one of/],
      ['capabilities_discover', { request: 'x', query: 'y' }, /`query` is not a known argument/],
      ['capability_details', { items: 'slack_send_message' }, /`items` must be array/],
    ];
    for (const [tool, args, message] of bad) {
      const err = await rejection(server.callTool(context(), tool, args));
      expect(err.code, `${tool} ${JSON.stringify(args)}`).to.equal(-32000);
      expect(err.message).to.match(message);
      expect(err.data?.error).to.equal('invalid_arguments');
    }
    expect(calls).to.deep.equal([]);
  });

  it('answers an unknown tool -32602 without calling a handler', async () => {
    const calls: Calls = [];
    const server = embeddedServer('svc-sidekick', recording(calls));
    const err = await rejection(server.callTool(context(), 'constructor', {}));
    expect(err.code).to.equal(-32602);
    expect(err.data?.error).to.equal('unknown_tool');
    expect(calls).to.deep.equal([]);
  });

  it('refuses a handler map that does not match the tool schemas', () => {
    const { capabilities_discover } = recording([]);
    const partial = { capabilities_discover } as unknown as ToolHandlers<'svc-sidekick', GatewayContext>;
    expect(() => embeddedServer('svc-sidekick', partial)).to.throw(/missing \[capability_details\]/);
    const more = { ...recording([]), capability_search: capabilities_discover };
    expect(() => embeddedServer('svc-sidekick', more)).to.throw(/extra \[capability_search\]/);
  });

  it('turns a thrown error into the tool failure onError gives, or rethrows it', async () => {
    const handlers: ToolHandlers<'mcp', GatewayContext> = {
      listServers: () => Promise.reject(new RangeError('no listing')),
    };
    const answered = embeddedServer('mcp', handlers, {
      onError: (err) => (err instanceof RangeError ? toolError(err.message) : undefined),
    });
    const result = await answered.callTool(context(), 'listServers', {});
    expect(result.isError).to.equal(true);
    expect(result.structuredContent).to.deep.equal({ error: 'no listing' });
    const plain = embeddedServer('mcp', handlers);
    let thrown: unknown;
    await plain.callTool(context(), 'listServers', {}).catch((err: unknown) => (thrown = err));
    expect(thrown).to.be.instanceOf(RangeError);
  });
});
