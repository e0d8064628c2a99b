import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listRuns as list } from '../list.js';

/** GET /v1/runs — the organisation's runs, newest first, with filters. */
export const listRuns: Handler<'listRuns'> = async (req, ctx) => {
  const { automationId, triggerId, status, createdAfter, createdBefore } = req.query;
  return {
    status: 200,
    body: await list(
      ctx.services.db,
      ctx.auth.orgId,
      { automationId, triggerId, status, createdAfter, createdBefore },
      pageOf(req),
    ),
  };
};
