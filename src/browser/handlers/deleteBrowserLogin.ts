import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { deleteLogin } from '../logins.js';

/** DELETE /v1/browser-logins/{loginId} — the login and its encrypted state go. */
export const deleteBrowserLogin: Handler<'deleteBrowserLogin'> = async (req, ctx) => {
  if (!(await deleteLogin(ctx.services.db, ctx.auth.orgId, req.params.loginId)))
    throw new AppError('ERR_NOT_FOUND', { message: 'Browser login not found' });
  return { status: 204 };
};
