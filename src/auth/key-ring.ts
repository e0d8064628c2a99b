import type { Knex } from 'knex';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import type { Logger } from '../config/logger.js';
import {
  SIGNING_ALG,
  createSigningKey,
  loadPrivateJwk,
  loadUsableKeys,
  pickActive,
  rotateSigningKeys,
  type SigningKeyRecord,
} from './signing-keys.js';

/** How often a process re-reads the key set to follow other processes' rotations. */
const REFRESH_MS = 60_000;
/** An unknown `kid` triggers at most one reload per second, so forged kids cannot flood the store. */
const MISS_RELOAD_MS = 1_000;

export interface PublicJwk {
  kid: string;
  kty: string;
  crv: string;
  x: string;
  y: string;
  alg: 'ES256';
  use: 'sig';
}

export interface KeyRingOptions {
  db: Knex;
  secretKey: Buffer;
  tokenTtlSeconds: number;
  maxAgeMs: number;
  now: () => number;
  log: Logger;
}

interface Entry {
  record: SigningKeyRecord;
  publicKey: CryptoKey;
}

/**
 * In-memory view of `signing_keys`: imported public keys by kid (verification never touches
 * the store for a known kid) and the decrypted private key of the active key.
 */
export class KeyRing {
  private entries = new Map<string, Entry>();
  private privateKeys = new Map<string, CryptoKey>();
  private active: SigningKeyRecord | undefined;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private lastMissReload = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;
  private rotating: Promise<void> | null = null;

  constructor(private readonly opts: KeyRingOptions) {}

  /** Creates the first key on an empty store and rotates a key older than the maximum age. */
  async start(): Promise<void> {
    await this.reload();
    if (!this.active) {
      const { kid } = await createSigningKey(this.opts.db, this.opts.secretKey, this.opts.now());
      this.opts.log.info({ kid }, 'created the first token signing key');
      await this.reload();
    }
    await this.rotateIfOld();
  }

  reload(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    const records = await loadUsableKeys(this.opts.db, this.opts.now());
    const next = new Map<string, Entry>();
    for (const record of records) {
      const known = this.entries.get(record.kid);
      const publicKey = known?.publicKey ?? ((await importJWK(record.publicJwk, SIGNING_ALG)) as CryptoKey);
      next.set(record.kid, { record, publicKey });
    }
    this.entries = next;
    for (const kid of this.privateKeys.keys()) if (!next.has(kid)) this.privateKeys.delete(kid);
    this.active = pickActive(records);
    this.loadedAt = this.opts.now();
  }

  private async refreshIfStale(): Promise<void> {
    if (this.opts.now() - this.loadedAt >= REFRESH_MS) await this.reload();
  }

  private async rotateIfOld(): Promise<void> {
    const active = this.active;
    if (!active || this.opts.now() - active.createdAtMs <= this.opts.maxAgeMs) return;
    this.rotating ??= (async () => {
      const rotated = await rotateSigningKeys(this.opts.db, this.opts.secretKey, {
        tokenTtlSeconds: this.opts.tokenTtlSeconds,
        nowMs: this.opts.now(),
        ifActiveKid: active.kid,
      });
      if (rotated)
        this.opts.log.info({ kid: rotated.kid, retired: active.kid }, 'rotated the token signing key by age');
      await this.reload();
    })().finally(() => {
      this.rotating = null;
    });
    await this.rotating;
  }

  /** The key new tokens are signed with. */
  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    await this.refreshIfStale();
    await this.rotateIfOld();
    let active = this.active;
    if (!active) {
      // Every key was retired elsewhere without a successor (should not happen): recover.
      await this.start();
      active = this.active;
      if (!active) throw new Error('no active signing key');
    }
    let key = this.privateKeys.get(active.kid);
    if (!key) {
      const jwk = await loadPrivateJwk(this.opts.db, this.opts.secretKey, active.kid);
      key = (await importJWK(jwk, SIGNING_ALG)) as CryptoKey;
      this.privateKeys.set(active.kid, key);
    }
    return { kid: active.kid, key };
  }

  /** The public key for `kid`, or null when unknown or past its expiry. */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    let entry = this.entries.get(kid);
    if (!entry) {
      const now = this.opts.now();
      if (this.loading) await this.loading;
      else if (now - this.lastMissReload >= MISS_RELOAD_MS) {
        this.lastMissReload = now;
        await this.reload();
      }
      entry = this.entries.get(kid);
    }
    if (!entry || this.isExpired(entry.record)) return null;
    return entry.publicKey;
  }

  /** Public keys that are active or retired but still within their expiry (RFC 7517 set). */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    await this.refreshIfStale();
    const keys: PublicJwk[] = [];
    for (const { record } of this.entries.values()) {
      if (this.isExpired(record)) continue;
      const jwk: JWK = record.publicJwk;
      keys.push({
        kid: record.kid,
        kty: String(jwk.kty),
        crv: String(jwk.crv),
        x: String(jwk.x),
        y: String(jwk.y),
        alg: SIGNING_ALG,
        use: 'sig',
      });
    }
    return { keys };
  }

  /** Explicit rotation (operators, tests): always produces a new signing key. */
  async rotate(): Promise<{ kid: string }> {
    const rotated = await rotateSigningKeys(this.opts.db, this.opts.secretKey, {
      tokenTtlSeconds: this.opts.tokenTtlSeconds,
      nowMs: this.opts.now(),
    });
    if (!rotated) throw new Error('rotation did not produce a key');
    this.opts.log.info({ kid: rotated.kid }, 'rotated the token signing key');
    await this.reload();
    return rotated;
  }

  private isExpired(record: SigningKeyRecord): boolean {
    return record.expiresAtMs !== null && record.expiresAtMs <= this.opts.now();
  }
}
