import { orgOf, pageOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { listAppServers as list } from '../registry.js';

/** GET /v1/servers — application servers registered by the organisation. */
export const listAppServers: Handler = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, orgOf(ctx), pageOf(req)),
});
