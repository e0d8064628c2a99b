/**
 * Spec endpoints 1 and 2 (and their GET forms): the four trigger-call operations share one
 * implementation in ../call.ts; these adapters only read the operation's own inputs.
 */
import { AppError } from '../../errors/index.js';
import { header, idempotencyKey } from '../../http/support.js';
import type { BeforeBody, Handler, HandlerRequest, OperationId, ServesPath } from '../../services.js';
// The channel modules alone (not the agents index, which loads the model runtime): the CLI loads triggers too.
import { authoriseChannel, serveChannel, isChannelId, type ChannelRecord } from '../../agents/index.js';
import { callTrigger, type TriggerCall } from '../call.js';

/** `x-api-wait`: `true` or `false` (default false); anything else is a bad request. */
function waitHeader(req: HandlerRequest<OperationId>): boolean {
  const v = header(req, 'x-api-wait')?.trim().toLowerCase();
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new AppError('ERR_REQUEST_INVALID', { message: 'x-api-wait must be true or false' });
}

/** The query as parsed; it becomes typed inputs once the trigger's workflow is known (../query-inputs.ts). */
function common(
  req: HandlerRequest<OperationId>,
): Pick<TriggerCall, 'query' | 'wait' | 'idempotencyKey' | 'raw' | 'contentType'> {
  return {
    query: req.query as Record<string, unknown>,
    wait: waitHeader(req),
    idempotencyKey: idempotencyKey(req),
    raw: req.raw,
    contentType: req.contentType,
  };
}

/**
 * Spec 1 and spec 5 share this path: a channel trigger id (src/agents: `chn_…`) is an agent API
 * channel, checked before its body is read and answered as `sendChannelMessage` describes.
 */
export const callApiTrigger: Handler<'callApiTrigger'> & { beforeBody: BeforeBody } = Object.assign(
  (async (req, ctx) => {
    if (ctx.preBody)
      return {
        ...(await serveChannel(ctx.services, ctx.preBody as ChannelRecord, req.body, req.headers)),
        describedBy: 'sendChannelMessage',
      };
    return callTrigger(ctx.services, {
      ...common(req),
      kind: 'api',
      triggerId: req.params.triggerId,
      apiKey: header(req, 'x-api-key'),
      body: req.body,
    });
  }) as Handler<'callApiTrigger'>,
  {
    beforeBody: (async (req, ctx) => {
      const id = req.params.triggerId ?? '';
      return isChannelId(id) ? authoriseChannel(ctx.services, id, req.headers, req.contentType) : undefined;
    }) as BeforeBody,
  },
);

/**
 * The GET form serves workflow triggers only: an agent channel takes POST with a JSON body, so
 * a channel trigger id answers 405 with `Allow: POST` (http/types.ts ServesPath). The id's
 * shape decides, before the key is looked at, so the answer is the same whatever the key and
 * whether such a channel exists.
 */
export const callApiTriggerWithQuery: Handler<'callApiTriggerWithQuery'> & { servesPath: ServesPath } = Object.assign(
  (async (req, ctx) =>
    callTrigger(ctx.services, {
      ...common(req),
      kind: 'api',
      triggerId: req.params.triggerId,
      apiKey: header(req, 'x-api-key'),
      body: undefined,
    })) as Handler<'callApiTriggerWithQuery'>,
  { servesPath: ((params) => !isChannelId(params.triggerId ?? '')) as ServesPath },
);

export const callWebhookTrigger: Handler<'callWebhookTrigger'> = async (req, ctx) =>
  callTrigger(ctx.services, {
    ...common(req),
    kind: 'webhook',
    triggerId: req.params.triggerId,
    apiKey: req.params.apiKey,
    body: req.body,
  });

export const callWebhookTriggerWithQuery: Handler<'callWebhookTriggerWithQuery'> = async (req, ctx) =>
  callTrigger(ctx.services, {
    ...common(req),
    kind: 'webhook',
    triggerId: req.params.triggerId,
    apiKey: req.params.apiKey,
    body: undefined,
  });
