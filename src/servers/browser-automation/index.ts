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
  type JsonResult,
  type ToolServer,
  embeddedServer,
} from '../../gateway/index.js';
import { allLogins, BrowserUnavailableError, TaskError, type BrowserService } from '../../browser/index.js';
import type { BrowserAutomationHandlers, ToolTypes } from '../../../generated/tools/servers.js';

/** The browser tasks the tools start and poll (src/browser/service.ts). */
export interface BrowserAutomationDeps {
  browser: Pick<BrowserService, 'startScript' | 'startOperator' | 'poll'>;
}

type Tools = ToolTypes['browser-automation'];

/**
 * The browser service answers its task records as `Record<string, unknown>`; their fields are
 * those of the tool's output schema (schemas/tools/browser-automation/*.output), which this
 * states for the typed handler.
 */
function taskResult<T extends keyof Tools>(record: Record<string, unknown>): JsonResult<Tools[T]['output']> {
  return jsonResult(record as Tools[T]['output']);
}

/** The five tools, each typed from its schemas; the task arguments go to the browser service as validated. */
function handlers(deps: BrowserAutomationDeps): BrowserAutomationHandlers<GatewayContext> {
  return {
    async 'browser-automation_playwright_run'(args, ctx) {
      return taskResult<'browser-automation_playwright_run'>(await deps.browser.startScript(ctx.orgId, args));
    },
    async 'browser-automation_playwright_run_continue'(args, ctx) {
      return taskResult<'browser-automation_playwright_run_continue'>(
        await deps.browser.poll(ctx.orgId, 'script', args),
      );
    },
    async 'browser-automation_operator_run'(args, ctx) {
      return taskResult<'browser-automation_operator_run'>(await deps.browser.startOperator(ctx.orgId, args));
    },
    async 'browser-automation_operator_run_continue'(args, ctx) {
      return taskResult<'browser-automation_operator_run_continue'>(
        await deps.browser.poll(ctx.orgId, 'operator', args),
      );
    },
    async 'browser-automation_logins_list'(_args, ctx) {
      const contexts = await allLogins(ctx.services.db, ctx.orgId);
      return jsonResult({ count: contexts.length, contexts });
    },
  };
}

/** A task's refusal, or no model configured (as for agent_invoke), is the tool's answer saying what to set. */
function onError(err: unknown): CallResult | undefined {
  if (err instanceof TaskError) return toolError(err.message);
  if (isAppError(err) && err.key === 'ERR_AGENT_MODEL_NOT_CONFIGURED') return toolError(err.message);
  // A server without Chromium is a protocol error saying how to install it.
  if (err instanceof BrowserUnavailableError)
    throw new GatewayError(RPC.INTERNAL, err.message, { error: 'browser_unavailable' });
  return undefined;
}

export function createBrowserAutomationServer(deps: BrowserAutomationDeps): ToolServer {
  return embeddedServer('browser-automation', handlers(deps), { onError });
}
