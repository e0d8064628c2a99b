import { pino, type Logger } from 'pino';
import { activeTraceIds } from '../kernel/tracing.js';

export type { Logger };

/** Header and field paths that may carry secrets; pino replaces their values. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'req.url',
  'client_secret',
  'clientSecret',
  'apiKey',
  'secret',
  'password',
  'token',
  'access_token',
];

/** Webhook and polling paths carry the key as a path segment: never log it. */
export function redactUrl(url: string): string {
  return url
    .replace(/(\/ext\/webhook\/)[^/?#]+/i, '$1[REDACTED]')
    .replace(/([?&](?:signature|sig|api_key|apiKey|client_secret)=)[^&#]*/gi, '$1[REDACTED]');
}

export interface LoggerOptions {
  /** Tracing is on: each line logged inside a span carries its `trace_id` and `span_id`. */
  traceIds?: boolean;
}

const traceMixin = (): object => activeTraceIds() ?? {};

export function createLogger(level: string, destination?: NodeJS.WritableStream, options: LoggerOptions = {}): Logger {
  return pino(
    {
      level,
      redact: { paths: redactPaths.filter((p) => p !== 'req.url'), censor: '[REDACTED]' },
      base: { service: 'switchyard' },
      ...(options.traceIds ? { mixin: traceMixin } : {}),
    },
    destination as never,
  );
}
