import { AppError } from '../../errors/index.js';
import type { Handler } from '../../services.js';
import { RETIRED_GRACE_S } from '../signing-keys.js';

/**
 * POST /v1/signing-keys/rotate: a new token signing key, for the organisations of ADMIN_ORG_IDS
 * only (the keys belong to the installation; openapi/management.yaml `rotateSigningKey`).
 */
export const rotateSigningKey: Handler<'rotateSigningKey'> = async (_req, ctx) => {
  const { config, tokens } = ctx.services;
  if (!config.adminOrgIds.includes(ctx.auth.orgId)) throw new AppError('ERR_ADMIN_REQUIRED');
  const now = Date.now();
  const { kid } = await tokens.rotate();
  return {
    status: 200,
    body: {
      kid,
      rotatedAt: new Date(now).toISOString(),
      retiredKeysValidUntil: new Date(now + (config.tokenTtlSeconds + RETIRED_GRACE_S) * 1000).toISOString(),
    },
  };
};
