import type { Handler } from '../../services.js';
import { header } from '../../http/support.js';
import { AppError } from '../../errors/index.js';
import { forwardedHeaders } from '../upstream/index.js';
import type { GatewayContext } from '../types.js';

/** `Accept` must include application/json (openapi/gateway.yaml: application/* and * / * count). */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const type = part.split(';')[0]!.trim().toLowerCase();
    return type === 'application/json' || type === 'application/*' || type === '*/*';
  });
}

/** POST {mcp_url}/{serverPath} — one JSON-RPC message or a batch (spec section 7). */
export const postMcpMessage: Handler<'postMcpMessage'> = async (req, ctx) => {
  if (!acceptsJson(header(req, 'accept'))) throw new AppError('ERR_NOT_ACCEPTABLE');
  const { gateway } = ctx.services;
  // The abort signal (client gone) is made only when a call asks for it: embedded tools never do.
  let abort: AbortController | undefined;
  const socket = req.raw.socket;
  const onClose = () => abort?.abort(new Error('the client went away'));
  try {
    const gctx: GatewayContext = {
      services: ctx.services,
      orgId: ctx.auth.orgId,
      // One client of the organisation: its API credential (stable across token renewals).
      callerId: `credential:${ctx.auth.credentialId}`,
      forwardedHeaders: forwardedHeaders(req.headers),
      get signal() {
        if (!abort) {
          abort = new AbortController();
          socket.once('close', onClose);
        }
        return abort.signal;
      },
      // The request logger is made only when a call logs (most never do).
      get log() {
        return ctx.log;
      },
    };
    const server = await gateway.catalog.resolve(gctx, req.params.serverPath);
    if (!server)
      throw new AppError('ERR_GATEWAY_UNKNOWN_SERVER', { message: `Unknown server path "${req.params.serverPath}"` });
    const answer = await gateway.router.handle(req.body, { ctx: gctx, server });
    if (answer === null) return { status: 202 };
    return { status: 200, body: answer };
  } finally {
    if (abort) socket.removeListener('close', onClose);
  }
};
