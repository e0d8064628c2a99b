import { getWorkflow as get } from '../workflows.js';
import { etag, orgOf, stringParam } from './support.js';
import type { Handler } from './types.js';

/** GET /v1/workflows/{automationId} — the current version; ETag carries it. */
export const getWorkflow: Handler = async (req, ctx) => {
  const wf = await get(ctx.services.db, orgOf(ctx), stringParam(req, 'automationId'));
  return { status: 200, body: wf, headers: etag(wf.version) };
};
