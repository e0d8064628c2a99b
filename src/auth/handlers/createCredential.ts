import { createCredential as create } from '../credentials.js';
import { NO_STORE } from './oauth.js';
import { parseLabel, requireAuth } from './management.js';
import type { Handler } from './types.js';

/**
 * Creates an API credential (spec "Authentication" 4): the client secret is in this response
 * only, so it must not be cached; it is active at once (see src/auth/credentials.ts).
 */
export const createCredential: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const { credential, clientSecret } = await create(ctx.services.db, orgId, { label: parseLabel(req.body, 'API credential') });
  ctx.log.info({ credentialId: credential.id, clientId: credential.clientId, orgId }, 'API credential created');
  return { status: 201, headers: { ...NO_STORE }, body: { ...credential, clientSecret } };
};
