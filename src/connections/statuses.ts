/**
 * Connection status values (spec "States and transitions": connected, error, disconnected)
 * and the `statuses` query parameter of spec section 10.
 */
import { AppError } from '../errors/index.js';

export type ConnectionStatus = 'connected' | 'error' | 'disconnected';
export const CONNECTION_STATUSES: readonly ConnectionStatus[] = ['connected', 'error', 'disconnected'];

export function isConnectionStatus(v: unknown): v is ConnectionStatus {
  return typeof v === 'string' && (CONNECTION_STATUSES as readonly string[]).includes(v);
}

/** Details shaped as in openapi/connect.yaml: `[{path, message}]`. */
function invalidStatuses(message: string): AppError {
  return new AppError('ERR_INVALID_STATUSES', { details: [{ path: 'statuses', message }] });
}

/**
 * `statuses` is a comma-separated subset of the status values; absent means all (spec
 * section 10). Our rule where the spec is silent: an empty value, an empty item, an unknown
 * value (matching is case-sensitive; spaces around items are ignored) or a repeated value is
 * a 400 invalid_statuses. An already-split array (a pipeline that explodes the parameter) is
 * treated as the same list.
 */
export function parseStatuses(raw: unknown): ConnectionStatus[] {
  if (raw === undefined || raw === null) return [...CONNECTION_STATUSES];
  const text = Array.isArray(raw) ? raw.map(String).join(',') : typeof raw === 'string' ? raw : undefined;
  if (text === undefined || text.trim() === '') throw invalidStatuses('empty value');
  const out: ConnectionStatus[] = [];
  for (const part of text.split(',')) {
    const v = part.trim();
    if (!isConnectionStatus(v)) {
      throw invalidStatuses(v === '' ? 'empty item' : `unknown value: ${v.slice(0, 50)}`);
    }
    if (out.includes(v)) throw invalidStatuses(`duplicate value: ${v}`);
    out.push(v);
  }
  return out;
}
