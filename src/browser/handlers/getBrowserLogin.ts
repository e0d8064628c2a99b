import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { getLogin } from '../logins.js';

/** GET /v1/browser-logins/{loginId} — another organisation's id answers 404 like a missing one. */
export const getBrowserLogin: Handler<'getBrowserLogin'> = async (req, ctx) => {
  const login = await getLogin(ctx.services.db, ctx.auth.orgId, req.params.loginId);
  if (!login) throw new AppError('ERR_NOT_FOUND', { message: 'Browser login not found' });
  return { status: 200, body: login };
};
