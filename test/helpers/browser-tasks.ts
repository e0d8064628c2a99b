/**
 * Browser scripts through the gateway's `browser-automation_playwright_run` tools, as a client
 * runs them: start a script, poll `…_continue` until it is no longer RUNNING.
 */
import { callTool } from '../integration/gateway/helpers.js';
import type { TestOrg, TestServer } from './server.js';

/** Starts `code` for `org`; the task's session id. Throws with the tool's answer when it is refused. */
export async function startScript(
  server: TestServer,
  org: TestOrg,
  code: string,
  buildId = 'bld_test',
): Promise<string> {
  const res = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', {
    code,
    buildId,
  });
  if (res.isError || res.code) throw new Error(`playwright_run: ${JSON.stringify(res)}`);
  return res.structuredContent.sessionId as string;
}

/** Polls the task until it is not RUNNING; its structured result. Throws after `limitMs`. */
export async function finishedScript(
  server: TestServer,
  org: TestOrg,
  sessionId: string,
  limitMs = 90_000,
): Promise<any> {
  const until = Date.now() + limitMs;
  for (;;) {
    const res = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run_continue', {
      sessionId,
    });
    if (res.structuredContent?.status !== 'RUNNING') return res.structuredContent;
    if (Date.now() > until) throw new Error(`task ${sessionId} still RUNNING after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts `code` and waits for its result. */
export async function runScript(server: TestServer, org: TestOrg, code: string, buildId?: string): Promise<any> {
  return finishedScript(server, org, await startScript(server, org, code, buildId));
}
