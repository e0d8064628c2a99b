/**
 * Embedded server `browser-automation` (spec section 12) over src/browser. `playwright_run`
 * starts a script task and answers RUNNING at once; `playwright_run_continue` polls it from
 * any process; `logins_list` lists the saved logins (management API `/v1/browser-logins`). An unknown session or a collection that cannot take files is the tool's own
 * failure (`isError: true`); a server without Chromium answers JSON-RPC -32603 with
 * `data.error = browser_unavailable` and how to install it. `operator_run` and its poll
 * are not implemented yet: a clear -32603 `not_implemented`, never a made-up result.
 */
import { AppError } from '../../errors/index.js';
import { GatewayError, RPC, jsonResult, toolError, type CallResult, type GatewayContext, type ToolServer } from '../../gateway/types.js';
import { embeddedServer } from '../embedded.js';
import { allLogins, BrowserUnavailableError, TaskError, type PollArgs, type ScriptArgs } from '../../browser/index.js';

const PREFIX = 'browser-automation_';

type Tool = (ctx: GatewayContext, args: Record<string, unknown>) => Promise<CallResult>;

function notYet(what: string): Tool {
  return () => Promise.reject(new AppError('ERR_NOT_IMPLEMENTED', { message: `Not implemented yet: ${what} (issue 12, browser automation: the language-driven operator comes after playwright_run).` }));
}

const tools: Record<string, Tool> = {
  async playwright_run(ctx, args) {
    return jsonResult(await ctx.services.browser.startScript(ctx.orgId, args as unknown as ScriptArgs));
  },
  async playwright_run_continue(ctx, args) {
    return jsonResult(await ctx.services.browser.poll(ctx.orgId, 'script', args as unknown as PollArgs));
  },
  operator_run: notYet('browser-automation_operator_run'),
  operator_run_continue: notYet('browser-automation_operator_run_continue'),
  async logins_list(ctx) {
    const contexts = await allLogins(ctx.services.db, ctx.orgId);
    return jsonResult({ count: contexts.length, contexts });
  },
};

export function createBrowserAutomationServer(): ToolServer {
  return embeddedServer('browser-automation', async (ctx, tool, args) => {
    const run = tools[tool.name.slice(PREFIX.length)];
    if (!run) throw new GatewayError(RPC.INTERNAL, `No implementation for ${tool.name}`, { error: 'internal_error' });
    try {
      return await run(ctx, args);
    } catch (err) {
      if (err instanceof TaskError) return toolError(err.message);
      if (err instanceof BrowserUnavailableError) throw new GatewayError(RPC.INTERNAL, err.message, { error: 'browser_unavailable' });
      throw err;
    }
  });
}
