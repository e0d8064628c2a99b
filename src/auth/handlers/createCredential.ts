import type { Handler } from '../../services.js';
import { createCredential as create } from '../credentials.js';
import { NO_STORE } from './oauth.js';
import { parseLabel } from './management.js';

/**
 * Creates an API credential (spec "Authentication" 4): the client secret is in this response
 * only, so it must not be cached; it is active at once (see src/auth/credentials.ts).
 */
export const createCredential: Handler<'createCredential'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const { credential, clientSecret } = await create(ctx.services.db, orgId, {
    label: parseLabel(req.body, 'API credential'),
  });
  ctx.log.info({ credentialId: credential.id, clientId: credential.clientId, orgId }, 'API credential created');
  return { status: 201, headers: { ...NO_STORE }, body: { ...credential, clientSecret } };
};
