/** Small CSV files for queue batch tests (openapi/queues.yaml: RFC 4180, comma, UTF-8, first record the header). */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** Writes `lines` joined with `eol` (and a final one) to dir/name; returns the path. */
export function writeCsv(dir: string, name: string, lines: string[], eol = '\n'): string {
  const file = path.join(dir, name);
  writeFileSync(file, lines.join(eol) + eol);
  return file;
}

/** Header `email,plan` and `count` good rows (`user<i>@example.com,pro`). */
export function leadRows(count: number, start = 1): string[] {
  return Array.from({ length: count }, (_, i) => `user${start + i}@example.com,pro`);
}
