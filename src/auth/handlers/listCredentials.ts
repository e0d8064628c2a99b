import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listCredentials as list } from '../credentials.js';

/** GET credentials of the token's organisation, oldest first, keyset-paginated. */
export const listCredentials: Handler<'listCredentials'> = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, ctx.auth.orgId, pageOf(req)),
});
