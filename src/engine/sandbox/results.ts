/**
 * The parent's second look at what a sandbox process sends back (limits in src/engine/README.md): the
 * runner already enforces them, but the child is not trusted, so files and log lines are
 * checked and bounded again here before they reach the run.
 */
import { cleanMimeType, defaultMimeType, sanitizeFileName, type SandboxLimits } from './limits.js';
import type { RawFile } from './protocol.js';
import type { SandboxFile } from './types.js';

/** ctx.log lines of one step, bounded by count and bytes; one marker line when cut. */
export class LogCollector {
  readonly lines: string[] = [];
  private bytes = 0;
  private cut = false;

  constructor(private readonly limits: SandboxLimits) {}

  push(line: string): void {
    if (this.cut) return;
    const size = Buffer.byteLength(line);
    if (this.lines.length >= this.limits.maxLogLines || this.bytes + size > this.limits.maxLogBytes + 256) {
      this.cut = true;
      this.lines.push(
        `[log truncated: at most ${this.limits.maxLogLines} lines and ${this.limits.maxLogBytes} bytes per step]`,
      );
      return;
    }
    this.bytes += size;
    this.lines.push(line);
  }
}

/**
 * Names sanitised, MIME types defaulted, a later file of the same (sanitised) name replacing
 * an earlier one, and the count and size limits checked; a string is the reason for failing.
 */
export function checkFiles(files: RawFile[], limits: SandboxLimits): SandboxFile[] | string {
  const byName = new Map<string, SandboxFile>();
  for (const f of files) {
    const fileName = sanitizeFileName(f.name);
    const given = f.mime === undefined ? undefined : cleanMimeType(f.mime);
    byName.set(fileName, { fileName, mimeType: given ?? defaultMimeType(fileName, { wasText: f.text }), data: f.data });
  }
  const out = [...byName.values()];
  if (out.length > limits.maxFiles) return `A step may write at most ${limits.maxFiles} files`;
  let total = 0;
  for (const f of out) {
    if (f.data.length > limits.maxFileBytes)
      return `File "${f.fileName}" is ${f.data.length} bytes; the limit is ${limits.maxFileBytes} bytes per file`;
    total += f.data.length;
  }
  if (total > limits.maxTotalFileBytes)
    return `The files of a step may total at most ${limits.maxTotalFileBytes} bytes`;
  return out;
}
