import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listLogins } from '../logins.js';

/** GET /v1/browser-logins — the organisation's saved logins, never their state. */
export const listBrowserLogins: Handler<'listBrowserLogins'> = async (req, ctx) => {
  return { status: 200, body: await listLogins(ctx.services.db, ctx.auth.orgId, pageOf(req)) };
};
