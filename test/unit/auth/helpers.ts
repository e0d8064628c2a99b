import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { importJWK, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { loadConfig, type Config } from '../../../src/config/index.js';
import { createLogger, type Logger } from '../../../src/config/logger.js';
import type { Knex } from '../../../src/storage/db.js';
import { AppError } from '../../../src/errors/index.js';
import { decrypt } from '../../../src/auth/index.js';

/** A real config for a test store; env overrides use the same names as production. */
export function testConfig(dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: dataDir,
    SECRET_KEY: randomBytes(32).toString('base64'),
    PUBLIC_URL: 'http://127.0.0.1:8080',
    LOG_LEVEL: 'silent',
    ...env,
  });
}

export const silentLog: Logger = createLogger('silent');

/** A logger whose output the test can search (e.g. to prove no secret was logged). */
export function capturingLog(): { log: Logger; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { log: createLogger('debug', sink), text: () => chunks.join('') };
}

/** Asserts that `p` rejects with ERR_AUTH_INVALID_TOKEN. */
export async function expectInvalidToken(p: Promise<unknown>, why: string): Promise<void> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught, `${why}: should be rejected`).to.be.instanceOf(AppError);
  expect((caught as AppError).key, why).to.equal('ERR_AUTH_INVALID_TOKEN');
  expect((caught as AppError).status, why).to.equal(401);
}

/** The private key of the active signing key, read and decrypted from the store like an attacker with the DB and the key file would. */
export async function activeSigningKey(db: Knex, config: Config): Promise<{ kid: string; key: CryptoKey }> {
  const row = (await db('signing_keys').whereNull('retired_at').orderBy('created_at', 'desc').first()) as
    { kid: string; private_jwk_enc: string } | undefined;
  if (!row) throw new Error('no active signing key');
  const jwk = JSON.parse(decrypt(config.secretKey, row.private_jwk_enc)) as Record<string, string>;
  return { kid: row.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
}

/** Signs arbitrary claims with an ES256 key (for crafting tokens our issuer never would). */
export async function craftToken(
  key: CryptoKey,
  header: { kid?: string; alg?: string },
  claims: JWTPayload,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: header.alg ?? 'ES256', typ: 'JWT', ...(header.kid ? { kid: header.kid } : {}) })
    .sign(key);
}

export function decodePart(token: string, index: 0 | 1): Record<string, unknown> {
  const part = token.split('.')[index];
  if (part === undefined) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/** A clock tests can move; passed to createTokenService as `now`. */
export function testClock(start = Date.now()): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}
