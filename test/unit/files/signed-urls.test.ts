import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { AppError } from '../../../src/errors/index.js';
import {
  ATTACHMENT_URL_TTL_SECONDS,
  BROWSER_FILE_URL_TTL_SECONDS,
  FILESTORAGE_URL_TTL_SECONDS,
  STEP_FILE_URL_TTL_SECONDS,
  signFileUrl,
  verifyFileSignature,
} from '../../../src/files/signed-urls.js';

const config = {
  secretKey: randomBytes(32),
  baseUrls: {
    triggers: 'http://t',
    auth: 'http://a',
    mcp: 'http://m',
    connect: 'http://c',
    runFiles: 'http://files.test',
  },
};
const NOW = Date.UTC(2025, 10, 21, 10, 15, 2);

function parse(url: string): { fileId: string; expires: string; signature: string } {
  const u = new URL(url);
  return {
    fileId: decodeURIComponent(u.pathname.replace(/^\/files\//, '')),
    expires: u.searchParams.get('expires')!,
    signature: u.searchParams.get('signature')!,
  };
}

function code(fn: () => unknown): { status: number; code: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    const e = err as AppError;
    return { status: e.status, code: e.code, message: e.message };
  }
  throw new Error('expected an AppError');
}

describe('signed run-file URLs (openapi/run-files.yaml downloadRunFile)', () => {
  it('TTLs: attachments 24 h, step files 24 h, browser files 1 h, filestorage 7 days', () => {
    expect(ATTACHMENT_URL_TTL_SECONDS).to.equal(86400);
    expect(STEP_FILE_URL_TTL_SECONDS).to.equal(86400);
    expect(BROWSER_FILE_URL_TTL_SECONDS).to.equal(3600);
    expect(FILESTORAGE_URL_TTL_SECONDS).to.equal(7 * 86400);
  });

  it('builds {run_files_url}/files/{fileId}?expires=<unix s>&signature=<hex>', () => {
    const url = signFileUrl(config, 'file_2Hs8Lq', ATTACHMENT_URL_TTL_SECONDS, NOW);
    expect(url).to.match(/^http:\/\/files\.test\/files\/file_2Hs8Lq\?expires=\d+&signature=[0-9a-f]{64}$/);
    const p = parse(url);
    expect(Number(p.expires)).to.equal(Math.floor(NOW / 1000) + 86400);
    expect(
      signFileUrl({ ...config, baseUrls: { ...config.baseUrls, runFiles: 'https://cdn.example/base/' } }, 'f', 60, NOW),
    ).to.match(/^https:\/\/cdn\.example\/base\/files\/f\?expires=/);
    expect(() => signFileUrl(config, 'f', 0)).to.throw(RangeError);
    expect(() => signFileUrl(config, 'f', 1.5)).to.throw(RangeError);
  });

  it('verifies its own URLs and returns the seconds left', () => {
    const p = parse(signFileUrl(config, 'file_a', 3600, NOW));
    expect(
      verifyFileSignature(config, p.fileId, { expires: Number(p.expires), sig: p.signature, nowMs: NOW }),
    ).to.equal(3600);
    expect(
      verifyFileSignature(config, p.fileId, { expires: p.expires, sig: p.signature, nowMs: NOW + 1000_000 }),
    ).to.equal(2600);
    // Ids needing percent-encoding round-trip.
    const q = parse(signFileUrl(config, 'odd id/ü', 60, NOW));
    expect(q.fileId).to.equal('odd id/ü');
    expect(verifyFileSignature(config, q.fileId, { expires: q.expires, sig: q.signature, nowMs: NOW })).to.equal(60);
  });

  it('a tampered URL is 403 invalid_signature: signature, file id, expiry or key changed', () => {
    const p = parse(signFileUrl(config, 'file_a', 3600, NOW));
    const flipped = (p.signature[0] === 'a' ? 'b' : 'a') + p.signature.slice(1);
    const invalid = { status: 403, code: 'invalid_signature', message: 'The download URL signature is not valid.' };
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: p.expires, sig: flipped, nowMs: NOW })),
    ).to.deep.equal(invalid);
    expect(
      code(() => verifyFileSignature(config, 'file_b', { expires: p.expires, sig: p.signature, nowMs: NOW })),
    ).to.deep.equal(invalid);
    expect(
      code(() =>
        verifyFileSignature(config, 'file_a', { expires: Number(p.expires) + 86400, sig: p.signature, nowMs: NOW }),
      ),
    ).to.deep.equal(invalid);
    expect(
      code(() =>
        verifyFileSignature({ secretKey: randomBytes(32) }, 'file_a', {
          expires: p.expires,
          sig: p.signature,
          nowMs: NOW,
        }),
      ),
    ).to.deep.equal(invalid);
    expect(
      code(() =>
        verifyFileSignature(config, 'file_a', { expires: p.expires, sig: p.signature.toUpperCase(), nowMs: NOW }),
      ).code,
    ).to.equal('invalid_signature');
    expect(
      code(() =>
        verifyFileSignature(config, 'file_a', { expires: p.expires, sig: p.signature.slice(0, 63), nowMs: NOW }),
      ).code,
    ).to.equal('invalid_signature');
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: p.expires, sig: '', nowMs: NOW })).code,
    ).to.equal('invalid_signature');
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: 'soon', sig: p.signature, nowMs: NOW })).code,
    ).to.equal('invalid_signature');
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: -1, sig: p.signature, nowMs: NOW })).code,
    ).to.equal('invalid_signature');
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: 1.5, sig: p.signature, nowMs: NOW })).code,
    ).to.equal('invalid_signature');
  });

  it('an expired URL with a good signature is 403 url_expired; a bad signature wins over expiry', () => {
    const p = parse(signFileUrl(config, 'file_a', 60, NOW));
    const later = NOW + 60_000;
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: p.expires, sig: p.signature, nowMs: later })),
    ).to.deep.equal({
      status: 403,
      code: 'url_expired',
      message: 'The download URL has expired; request a new one.',
    });
    expect(
      verifyFileSignature(config, 'file_a', { expires: p.expires, sig: p.signature, nowMs: later - 1000 }),
    ).to.equal(1);
    const bad = '0'.repeat(64);
    expect(
      code(() => verifyFileSignature(config, 'file_a', { expires: p.expires, sig: bad, nowMs: later })).code,
    ).to.equal('invalid_signature');
  });
});
