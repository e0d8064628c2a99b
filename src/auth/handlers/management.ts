import { AppError } from '../../errors/index.js';

/**
 * Shared request handling of the management operations: every one is Bearer-secured and
 * scoped to the token's organisation (every lookup is org-scoped).
 * Paging, path parameters and the token's organisation come typed from src/http/types.ts.
 */

/**
 * Decision: `label` is optional (a default names the item) and at most 200 characters, the
 * column width; surrounding whitespace is dropped. Checked here too, not only by the
 * pipeline's schema check, so the rule holds for every caller of the handler.
 */
export function parseLabel(body: { label?: unknown } | undefined, fallback: string): string {
  if (body === undefined || body === null) return fallback;
  if (typeof body !== 'object' || Array.isArray(body))
    throw new AppError('ERR_REQUEST_INVALID', { message: 'The body must be a JSON object' });
  const label = body.label;
  if (label === undefined) return fallback;
  if (typeof label !== 'string' || label.trim() === '' || label.trim().length > 200) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: 'label must be a non-empty string of at most 200 characters',
    });
  }
  return label.trim();
}

export function notFound(): AppError {
  return new AppError('ERR_NOT_FOUND');
}
