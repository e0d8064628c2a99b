import { AppError } from '../../errors/index.js';
import type { Handler } from '../../services.js';
import { header } from '../../http/support.js';
import { listUserConnections as list } from '../connections.js';
import { parseStatuses } from '../statuses.js';

/**
 * GET /manage/user-connections (spec section 10): a bare array of the spec's Connection
 * objects ({id, name, service_key, status}), optionally filtered by `statuses`. An
 * X-Selected-Org header, when sent, must name the token's organisation (403 otherwise).
 */
export const listUserConnections: Handler<'listUserConnections'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const selected = header(req, 'x-selected-org');
  if (selected !== undefined && selected !== orgId) throw new AppError('ERR_AUTH_ORG_MISMATCH');
  const statuses = parseStatuses(req.query.statuses);
  return { status: 200, body: await list(ctx.services.db, orgId, statuses) };
};
