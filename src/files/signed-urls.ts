/**
 * Signed, expiring download URLs on the run-files host (spec `{run_files_url}`;
 * openapi/run-files.yaml `downloadRunFile`):
 *
 *   {run_files_url}/files/{fileId}?expires=<unix seconds>&signature=<hex HMAC-SHA256>
 *
 * The URL is the credential: no token is needed to download. The signature covers the file
 * id and the expiry, with a key derived from the service's secret key (domain-separated from
 * its other uses of that key).
 */
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { derivedKey, hmac, safeEqual } from '../kernel/crypto.js';

/** Spec "Limits": attachment URLs are valid 24 hours. */
export const ATTACHMENT_URL_TTL_SECONDS = 24 * 3600;
/** openapi/run-files.yaml decision: step result files and designated outputs, 24 hours. */
export const STEP_FILE_URL_TTL_SECONDS = 24 * 3600;
/** Spec "Limits" (about 1 hour) and the openapi decision: browser task files, exactly 1 hour. */
export const BROWSER_FILE_URL_TTL_SECONDS = 3600;
/** Spec "Events": filestorage `signedUrl` valid 7 days. */
export const FILESTORAGE_URL_TTL_SECONDS = 7 * 24 * 3600;

type SigningConfig = Pick<Config, 'secretKey' | 'baseUrls'>;

/** HMAC key for run-file URLs, derived from the service's secret key (domain-separated). */
function urlKey(config: Pick<Config, 'secretKey'>): Buffer {
  return derivedKey(config.secretKey, 'switchyard/run-files/url-signing/v1');
}

function signature(config: Pick<Config, 'secretKey'>, fileId: string, expires: number): string {
  return hmac(urlKey(config), `files\n${fileId}\n${expires}`);
}

/** A signed URL for `fileId`, valid `ttlSeconds` from `nowMs`. */
export function signFileUrl(config: SigningConfig, fileId: string, ttlSeconds: number, nowMs = Date.now()): string {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) throw new RangeError('ttlSeconds must be a positive integer');
  const expires = Math.floor(nowMs / 1000) + ttlSeconds;
  const base = config.baseUrls.runFiles.replace(/\/+$/, '');
  return `${base}/files/${encodeURIComponent(fileId)}?expires=${expires}&signature=${signature(config, fileId, expires)}`;
}

function asExpiry(expires: number | string): number | undefined {
  if (typeof expires === 'number') return Number.isSafeInteger(expires) && expires >= 0 ? expires : undefined;
  return /^[0-9]{1,15}$/.test(expires) ? Number(expires) : undefined;
}

/**
 * Checks a download URL, in the order openapi/run-files.yaml prescribes so an invalid URL
 * never reveals anything: a wrong signature → 403 `invalid_signature`; then a past expiry →
 * 403 `url_expired`. The comparison is constant-time. Returns the seconds left before expiry.
 */
export function verifyFileSignature(
  config: Pick<Config, 'secretKey'>,
  fileId: string,
  { expires, sig, nowMs = Date.now() }: { expires: number | string; sig: string; nowMs?: number },
): number {
  const exp = asExpiry(expires);
  const expected = signature(config, fileId, exp ?? -1);
  if (typeof sig !== 'string' || !safeEqual(expected, sig) || exp === undefined)
    throw new AppError('ERR_FILE_INVALID_SIGNATURE');
  const left = exp - Math.floor(nowMs / 1000);
  if (left <= 0) throw new AppError('ERR_FILE_URL_EXPIRED');
  return left;
}
