import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createWorkflow as create } from '../workflows.js';

/** POST /v1/workflows — publishes version 1 of a new workflow (stepMap all 1). */
export const createWorkflow: Handler<'createWorkflow'> = async (req, ctx) => {
  const wf = await create(ctx.services.db, ctx.auth.orgId, req.body);
  return { status: 201, body: wf, headers: etag(wf.version) };
};
