import { createWorkflow as create } from '../workflows.js';
import { etag, orgOf } from './support.js';
import type { Handler } from './types.js';

/** POST /v1/workflows — publishes version 1 of a new workflow (stepMap all 1). */
export const createWorkflow: Handler = async (req, ctx) => {
  const wf = await create(ctx.services.db, orgOf(ctx), req.body);
  return { status: 201, body: wf, headers: etag(wf.version) };
};
