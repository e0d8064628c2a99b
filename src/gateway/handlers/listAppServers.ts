import type { Handler } from '../../services.js';
import { withHealth } from './server-health.js';
import { pageOf } from '../../http/support.js';
import { listAppServers as list } from '../registry.js';

/** GET /v1/servers — application servers registered by the organisation. */
export const listAppServers: Handler<'listAppServers'> = async (req, ctx) => {
  const page = await list(ctx.services.db, ctx.auth.orgId, pageOf(req));
  return {
    status: 200,
    body: { ...page, items: withHealth(ctx.services, ctx.auth.orgId, page.items) },
  };
};
