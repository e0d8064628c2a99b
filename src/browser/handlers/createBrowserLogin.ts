import type { Handler } from '../../services.js';
import { createLogin, type StorageState } from '../logins.js';

/** POST /v1/browser-logins — the state is stored encrypted; the answer never carries it. */
export const createBrowserLogin: Handler<'createBrowserLogin'> = async (req, ctx) => {
  const { label, service, loginUrl, storageState } = req.body;
  const login = await createLogin(ctx.services.db, ctx.services.config.secretKey, ctx.auth.orgId, {
    label,
    service,
    loginUrl,
    storageState: storageState as StorageState,
  });
  return { status: 201, body: login };
};
