import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listConnections as list } from '../connections.js';
import { parseStatuses } from '../statuses.js';

/** GET /v1/connections — optional filters serviceKey and statuses (comma-separated). */
export const listConnections: Handler<'listConnections'> = async (req, ctx) => {
  const { serviceKey, statuses } = req.query;
  const page = await list(
    ctx.services.db,
    ctx.auth.orgId,
    {
      serviceKey,
      statuses: statuses === undefined ? undefined : parseStatuses(statuses),
    },
    pageOf(req),
  );
  return { status: 200, body: page };
};
