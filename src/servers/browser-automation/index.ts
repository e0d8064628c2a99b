/**
 * Embedded server `browser-automation` (spec section 12) over src/browser. `playwright_run`
 * starts a script task and `operator_run` a language-driven operator task (src/browser/operator);
 * both answer RUNNING at once, and their `_continue` tools poll from any process; `logins_list`
 * lists the saved logins (management API `/v1/browser-logins`). An unknown session, a
 * collection that cannot take files, a file to upload that cannot be fetched or `cua` without a
 * computer-use model, or no model configured, is the tool's own failure (`isError: true`, saying
 * what to set); a server without Chromium answers JSON-RPC -32603 with
 * `data.error = browser_unavailable` and how to install it.
 */
import { isAppError } from '../../errors/index.js';
import {
  GatewayError,
  RPC,
  jsonResult,
  toolError,
  type CallResult,
  type GatewayContext,
  type ToolServer,
  embeddedServer,
} from '../../gateway/index.js';
import {
  allLogins,
  BrowserUnavailableError,
  TaskError,
  type OperatorArgs,
  type PollArgs,
  type ScriptArgs,
  type BrowserService,
} from '../../browser/index.js';

const PREFIX = 'browser-automation_';

/** The browser tasks the tools start and poll (src/browser/service.ts). */
export interface BrowserAutomationDeps {
  browser: () => Pick<BrowserService, 'startScript' | 'startOperator' | 'poll'>;
}

type Tool = (ctx: GatewayContext, args: Record<string, unknown>, deps: BrowserAutomationDeps) => Promise<CallResult>;

const tools: Record<string, Tool> = {
  async playwright_run(ctx, args, deps) {
    return jsonResult(await deps.browser().startScript(ctx.orgId, args as unknown as ScriptArgs));
  },
  async playwright_run_continue(ctx, args, deps) {
    return jsonResult(await deps.browser().poll(ctx.orgId, 'script', args as unknown as PollArgs));
  },
  async operator_run(ctx, args, deps) {
    return jsonResult(await deps.browser().startOperator(ctx.orgId, args as unknown as OperatorArgs));
  },
  async operator_run_continue(ctx, args, deps) {
    return jsonResult(await deps.browser().poll(ctx.orgId, 'operator', args as unknown as PollArgs));
  },
  async logins_list(ctx) {
    const contexts = await allLogins(ctx.services.db, ctx.orgId);
    return jsonResult({ count: contexts.length, contexts });
  },
};

export function createBrowserAutomationServer(deps: BrowserAutomationDeps): ToolServer {
  return embeddedServer('browser-automation', async (ctx, tool, args) => {
    const run = tools[tool.name.slice(PREFIX.length)];
    if (!run) throw new GatewayError(RPC.INTERNAL, `No implementation for ${tool.name}`, { error: 'internal_error' });
    try {
      return await run(ctx, args, deps);
    } catch (err) {
      if (err instanceof TaskError) return toolError(err.message);
      // As for agent_invoke: a server without a model is the tool's answer, which says what to set.
      if (isAppError(err) && err.key === 'ERR_AGENT_MODEL_NOT_CONFIGURED') return toolError(err.message);
      if (err instanceof BrowserUnavailableError)
        throw new GatewayError(RPC.INTERNAL, err.message, { error: 'browser_unavailable' });
      throw err;
    }
  });
}
