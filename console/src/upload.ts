/**
 * A file PUT with upload progress (fetch reports none; XMLHttpRequest's `upload` events do).
 * The URL is used on this page's own origin, which the Content-Security-Policy admits.
 */
import { ApiFailure, failureOf } from './api.ts';

export function putWithProgress(
  url: string,
  file: Blob,
  opts: { headers: Record<string, string>; onProgress: (sent: number, total: number) => void },
): Promise<unknown> {
  const target = new URL(url, location.origin);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', location.origin + target.pathname + target.search);
    for (const [name, value] of Object.entries(opts.headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => opts.onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onerror = () => reject(new ApiFailure(0, 'network_error', 'The upload could not reach the service'));
    xhr.onload = () => {
      let body: unknown;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(failureOf(new Response(null, { status: xhr.status, statusText: xhr.statusText }), body));
    };
    xhr.send(file);
  });
}
