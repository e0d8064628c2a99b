import { expect } from 'chai';
import { call, type TestServer, type TestOrg } from './server.js';

export interface Deployed {
  automationId: string;
  apiTriggerId: string;
  webhookTriggerId: string;
}

/** Deploys a workflow and an API and a webhook trigger for it over the management API. */
export async function deploy(
  server: TestServer,
  org: TestOrg,
  definition: Record<string, unknown>,
  designatedOutput?: { stepIndex: number; fileName: string },
): Promise<Deployed> {
  const wf = await call(server.baseUrl, 'POST', '/v1/workflows', { token: org.token, body: definition });
  expect(wf.status, wf.text).to.equal(201);
  const api = await call(server.baseUrl, 'POST', '/v1/triggers', {
    token: org.token,
    body: { automationId: wf.body.automationId, kind: 'api', ...(designatedOutput ? { designatedOutput } : {}) },
  });
  expect(api.status, api.text).to.equal(201);
  const hook = await call(server.baseUrl, 'POST', '/v1/triggers', {
    token: org.token,
    body: { automationId: wf.body.automationId, kind: 'webhook' },
  });
  expect(hook.status, hook.text).to.equal(201);
  return {
    automationId: wf.body.automationId,
    apiTriggerId: api.body.triggerId,
    webhookTriggerId: hook.body.triggerId,
  };
}

/** Polls the spec's status endpoint until the run is terminal (2 s cadence is the spec's; tests poll fast). */
export async function waitTerminal(
  server: TestServer,
  apiKey: string,
  automationId: string,
  runId: string,
  timeoutMs = 20_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(server.baseUrl, 'GET', `/ext/webhook/${apiKey}/runs/${automationId}/${runId}/status`);
    expect(res.status, res.text).to.equal(200);
    if (['COMPLETE', 'FAILED', 'TIMEOUT'].includes(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const code = (name: string, body: string, extra: Record<string, unknown> = {}) => ({
  type: 'code',
  name,
  code: body,
  ...extra,
});
