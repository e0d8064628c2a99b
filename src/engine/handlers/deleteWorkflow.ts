import { deleteWorkflow as remove } from '../workflows.js';
import { orgOf, parseIfMatch, stringParam } from './support.js';
import type { Handler } from './types.js';

/** DELETE /v1/workflows/{automationId} — with its versions and triggers; If-Match optional. */
export const deleteWorkflow: Handler = async (req, ctx) => {
  await remove(ctx.services.db, orgOf(ctx), stringParam(req, 'automationId'), parseIfMatch(req));
  return { status: 204 };
};
