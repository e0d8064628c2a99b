import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listAppServers as list } from '../registry.js';

/** GET /v1/servers — application servers registered by the organisation. */
export const listAppServers: Handler<'listAppServers'> = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, ctx.auth.orgId, pageOf(req)),
});
