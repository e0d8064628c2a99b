import type { Handler } from '../../services.js';
import { rotateChannelKey as rotate } from '../channels.js';

/** POST /v1/channels/{triggerId}/rotate-key — one UPDATE swaps the key hash (spec "Authentication" 2). */
export const rotateChannelKey: Handler<'rotateChannelKey'> = async (req, ctx) => {
  const rotated = await rotate(ctx.services.db, ctx.auth.orgId, req.params.triggerId);
  return { status: 200, body: rotated };
};
