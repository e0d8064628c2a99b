/**
 * GET /v1/runs/{runId} (openapi/management.yaml `getRun`): one run of the token's organisation
 * with its steps. Like the results endpoint it is shaped by the trigger's designated output,
 * so it sits with the triggers, above the runs it reads.
 */
import { AppError } from '../../errors/index.js';
import { detailView, findRun } from '../../runs/index.js';
import type { Handler } from '../../services.js';
import { findTrigger } from '../triggers.js';

export const getRun: Handler<'getRun'> = async (req, ctx) => {
  const { db, config } = ctx.services;
  const run = await findRun(db, ctx.auth.orgId, req.params.runId);
  if (!run) throw new AppError('ERR_NOT_FOUND');
  const trigger = run.trigger_id ? await findTrigger(db, run.org_id, run.trigger_id) : undefined;
  return {
    status: 200,
    body: await detailView(db, config, run, trigger?.designatedOutput),
    headers: { 'Cache-Control': 'no-store' },
  };
};
