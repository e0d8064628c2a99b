/**
 * Reads a fetch Response body up to a byte limit: a declared or streamed size over the limit
 * stops reading (and cancels the body) instead of buffering it, so an upstream can never fill
 * the service's memory. Used by http steps and by proxied HTTP APIs.
 */
export async function readBounded(res: Response, maxBytes: number): Promise<Buffer | 'too-large'> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    return 'too-large';
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return 'too-large';
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, size);
}
