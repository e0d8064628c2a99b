import type { Handler } from '../../services.js';
import { createApiKey as create } from '../api-keys.js';
import { NO_STORE } from './oauth.js';
import { parseLabel } from './management.js';

/** Creates a trigger API key (spec "Authentication" 1); the key is in this response only. */
export const createApiKey: Handler<'createApiKey'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const { apiKey, secret } = await create(ctx.services.db, orgId, { label: parseLabel(req.body, 'API key') });
  ctx.log.info({ keyId: apiKey.id, orgId }, 'API key created');
  return { status: 201, headers: { ...NO_STORE }, body: { ...apiKey, apiKey: secret } };
};
