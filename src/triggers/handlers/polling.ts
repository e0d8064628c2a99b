/**
 * Spec endpoints 3 and 4: run status and results, authorised by the API key in the path
 * (used for polling whichever trigger form started the run). The results are shaped by the
 * trigger's designated output, so polling sits with the triggers, above the runs it reads.
 */
import { AppError } from '../../errors/index.js';
import { findRun, resultsView, statusView, type RunRow } from '../../runs/index.js';
import type { Handler, Services } from '../../services.js';
import { findTrigger } from '../triggers.js';

async function runFor(services: Services, apiKey: string, automationId: string, runId: string): Promise<RunRow> {
  const key = await services.apiKeys.verify(apiKey);
  if (!key) throw new AppError('ERR_AUTH_INVALID_API_KEY');
  const run = await findRun(services.db, key.orgId, runId);
  if (!run || run.workflow_id !== automationId) throw new AppError('ERR_RUN_NOT_FOUND');
  return run;
}

export const getRunStatus: Handler<'getRunStatus'> = async (req, ctx) => {
  const run = await runFor(ctx.services, req.params.apiKey, req.params.automationId, req.params.runId);
  return { status: 200, body: await statusView(ctx.services.db, run), headers: { 'Cache-Control': 'no-store' } };
};

export const getRunResults: Handler<'getRunResults'> = async (req, ctx) => {
  const run = await runFor(ctx.services, req.params.apiKey, req.params.automationId, req.params.runId);
  const trigger = run.trigger_id ? await findTrigger(ctx.services.db, run.org_id, run.trigger_id) : undefined;
  return {
    status: 200,
    body: await resultsView(ctx.services.db, ctx.services.config, run, trigger?.designatedOutput),
    headers: { 'Cache-Control': 'no-store' },
  };
};
