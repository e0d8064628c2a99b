/**
 * IPC messages between the service and a sandbox process (runner.cjs). Tiny and versioned: a
 * process speaking another version is killed, never trusted. Everything from the child is
 * checked field by field before use (`parseChildMessage`), because code running in the child
 * is not trusted. The child checks what it receives too: a malformed message ends the process.
 */
import { RUNNER_MESSAGE as M, RUNNER_PROTOCOL } from '../../containment/index.js';

export const PROTOCOL_VERSION = RUNNER_PROTOCOL.code;

export interface ExecMessage {
  v: typeof PROTOCOL_VERSION;
  t: typeof M.exec;
  id: number;
  /** The step's JavaScript, the body of an async function receiving `ctx`. */
  code: string;
  /** JSON text of `{inputs, steps}`, parsed inside the step's context. */
  data: string;
  timeoutMs: number;
  /** Heap limit of the isolate the step runs in (its memory class). */
  memoryMb: number;
  /**
   * Context key (README.md "Context reuse"): executions with the same key may run in the same
   * warm context of an isolate, globals reset in between. Absent: a fresh context, used once.
   */
  key?: string;
}

/** Longest context key the runner accepts (the adapter's keys are about 150 characters). */
export const MAX_CONTEXT_KEY = 1024;

export interface RawFile {
  name: string;
  mime: string | undefined;
  /** Written as a string (or JSON) rather than bytes: decides the default MIME type. */
  text: boolean;
  data: Buffer;
}

/** `reused`: the execution ran in a context kept from an earlier one (observability only). */
export type DoneOutcome = (
  | { outcome: 'ok'; kind: 'string' | 'json' | 'undefined'; text: string; files: RawFile[] }
  | { outcome: 'error' | 'invalid' | 'timeout' | 'stalled' | 'memory'; message: string }
) & { reused?: boolean };

export type ChildMessage =
  | { t: typeof M.ready }
  | { t: typeof M.log; id: number; line: string }
  | ({ t: typeof M.done; id: number } & DoneOutcome);

const str = (v: unknown): v is string => typeof v === 'string';
const FAILURES = ['error', 'invalid', 'timeout', 'stalled', 'memory'] as const;

function parseFiles(value: unknown): RawFile[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const files: RawFile[] = [];
  for (const f of value as unknown[]) {
    if (!f || typeof f !== 'object') return undefined;
    const { name, mime, text, data } = f as Record<string, unknown>;
    if (!str(name) || (mime !== undefined && !str(mime)) || typeof text !== 'boolean') return undefined;
    // `advanced` serialization turns a Buffer into a Uint8Array on arrival.
    if (!(data instanceof Uint8Array)) return undefined;
    files.push({ name, mime, text, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) });
  }
  return files;
}

/** A child message in its typed form, or undefined when it is not a well-formed v1 message. */
export function parseChildMessage(raw: unknown): ChildMessage | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const m = raw as Record<string, unknown>;
  if (m.v !== PROTOCOL_VERSION) return undefined;
  if (m.t === M.ready) return { t: M.ready };
  if (typeof m.id !== 'number') return undefined;
  if (m.t === M.log) return str(m.line) ? { t: M.log, id: m.id, line: m.line } : undefined;
  if (m.t !== M.done) return undefined;
  if (m.reused !== undefined && typeof m.reused !== 'boolean') return undefined;
  const reused = m.reused === true;
  if (m.outcome === 'ok') {
    const files = parseFiles(m.files);
    if (!files || !str(m.text) || (m.kind !== 'string' && m.kind !== 'json' && m.kind !== 'undefined'))
      return undefined;
    return { t: M.done, id: m.id, outcome: 'ok', kind: m.kind, text: m.text, files, reused };
  }
  const failure = FAILURES.find((f) => f === m.outcome);
  return failure && str(m.message) ? { t: M.done, id: m.id, outcome: failure, message: m.message, reused } : undefined;
}
