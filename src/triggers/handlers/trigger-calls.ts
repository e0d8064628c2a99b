/**
 * Spec endpoints 1 and 2 (and their GET forms): the four trigger-call operations share one
 * implementation in ../call.ts; these adapters only read the operation's own inputs.
 */
import { AppError } from '../../errors/index.js';
import { header } from '../../http/support.js';
import type { Handler, HandlerRequest, OperationId } from '../../services.js';
import { callTrigger, type TriggerCall } from '../call.js';

/** `x-api-wait`: `true` or `false` (default false); anything else is a bad request. */
function waitHeader(req: HandlerRequest<OperationId>): boolean {
  const v = header(req, 'x-api-wait')?.trim().toLowerCase();
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new AppError('ERR_REQUEST_INVALID', { message: 'x-api-wait must be true or false' });
}

function idempotencyKey(req: HandlerRequest<OperationId>): string | undefined {
  const v = header(req, 'idempotency-key');
  if (v === undefined) return undefined;
  if (v.length < 1 || v.length > 255) throw new AppError('ERR_REQUEST_INVALID', { message: 'Idempotency-Key must be 1 to 255 characters' });
  return v;
}

/** The query as parsed; it becomes typed inputs once the trigger's workflow is known (../query-inputs.ts). */
function common(req: HandlerRequest<OperationId>): Pick<TriggerCall, 'query' | 'wait' | 'idempotencyKey' | 'raw' | 'contentType'> {
  return { query: req.query as Record<string, unknown>, wait: waitHeader(req), idempotencyKey: idempotencyKey(req), raw: req.raw, contentType: req.contentType };
}

export const callApiTrigger: Handler<'callApiTrigger'> = async (req, ctx) =>
  callTrigger(ctx.services, { ...common(req), kind: 'api', triggerId: req.params.triggerId, apiKey: header(req, 'x-api-key'), body: req.body });

export const callApiTriggerWithQuery: Handler<'callApiTriggerWithQuery'> = async (req, ctx) =>
  callTrigger(ctx.services, { ...common(req), kind: 'api', triggerId: req.params.triggerId, apiKey: header(req, 'x-api-key'), body: undefined });

export const callWebhookTrigger: Handler<'callWebhookTrigger'> = async (req, ctx) =>
  callTrigger(ctx.services, { ...common(req), kind: 'webhook', triggerId: req.params.triggerId, apiKey: req.params.apiKey, body: req.body });

export const callWebhookTriggerWithQuery: Handler<'callWebhookTriggerWithQuery'> = async (req, ctx) =>
  callTrigger(ctx.services, { ...common(req), kind: 'webhook', triggerId: req.params.triggerId, apiKey: req.params.apiKey, body: undefined });
