import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listApiKeys as list } from '../api-keys.js';

/** GET trigger API keys of the token's organisation, oldest first, keyset-paginated. */
export const listApiKeys: Handler<'listApiKeys'> = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, ctx.auth.orgId, pageOf(req)),
});
