import type { Handler, BeforeBody } from '../../services.js';
import { checkUploadTarget, storeUpload, type UploadRow } from '../uploads.js';

/**
 * PUT /api/queues/uploads/{csvKey}?expires&signature — the signature, expiry, key state and
 * declared length are checked before a byte of the body is read; the body streams to the blob store.
 */
const check: BeforeBody = async (req, ctx) => {
  const url = req.raw.url ?? '';
  const q = url.indexOf('?');
  const length = req.headers['content-length'];
  return checkUploadTarget(ctx.services.db, ctx.services.config, req.params.csvKey!, {
    query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)),
    contentLength: typeof length === 'string' ? length : undefined,
  });
};

export const uploadCsvFile: Handler<'uploadCsvFile'> = Object.assign(
  async (req: Parameters<Handler<'uploadCsvFile'>>[0], ctx: Parameters<Handler<'uploadCsvFile'>>[1]) => ({
    status: 200,
    body: await storeUpload(ctx.services.db, ctx.services.blobs, ctx.preBody as UploadRow, req.raw),
  }),
  { beforeBody: check },
);
