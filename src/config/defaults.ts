/** Every tunable with its default. Values here are the embedded, single-process defaults. */
export const defaults = {
  port: 8080,
  host: '0.0.0.0',
  dataDir: './data',
  /** Runtime token lifetime: spec "Limits" — 60 minutes (`expires_in` 3600). */
  tokenTtlSeconds: 3600,
  /** Our rule (spec leaves revocation open): revoked credentials fail within 5 s. */
  revocationCacheMs: 2000,
  /** Signing keys rotate after this age; old keys stay published until their tokens expire. */
  signingKeyMaxAgeDays: 30,
  tokenAudience: 'switchyard',
  logLevel: 'info',
  /** Management list pagination. */
  pageDefault: 50,
  pageMax: 200,
  /** Body limits for JSON/form bodies (multipart is streamed separately). */
  jsonBodyLimitBytes: 1024 * 1024,
} as const;
