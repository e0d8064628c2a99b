/**
 * `code` steps (schema codeStep; src/engine/README.md): the step's JavaScript runs in the sandbox pool;
 * its return value becomes the result. Templates are not applied to code.
 * Result types: a string is plaintext, or markdown when the step says so, or JSON text when
 * the step says json (it must then parse); undefined is an empty result; anything else is
 * JSON. The outcome of the sandbox maps to the step status and exit code (types.ts EXIT).
 */
import { createHash } from 'node:crypto';
import { OrgMemo } from '../../kernel/org-memo.js';
import type { WorkflowStep } from '../definition.js';
import type { SandboxRun } from '../sandbox/pool.js';
import {
  EXIT,
  failed,
  stoppedByRun,
  type ExecutedStep,
  type ResultType,
  type StepDeps,
  type StepRunContext,
} from './types.js';
import { stepsByIndex } from './context.js';

const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_TIMEOUT_MS = 300_000;

/**
 * sha256 of recent code strings per organisation: hashing is per code version, not per
 * execution. Per organisation: the code is the organisation's own, and a shared entry would
 * let another organisation's identical code skip the hash (a timing difference).
 */
export const codeHashes = new OrgMemo<string>(512);
/** Longer code is hashed each time rather than held here (the cache is bounded in count only). */
const HASH_CACHE_MAX_CHARS = 64 * 1024;

const sha256 = (code: string): string => createHash('sha256').update(code).digest('base64url');

function codeHash(orgId: string, code: string): string {
  if (code.length > HASH_CACHE_MAX_CHARS) return sha256(code);
  return codeHashes.get(orgId, code, () => sha256(code));
}

/**
 * Who may share a warm context (src/engine/sandbox/README.md "Context reuse"): the same step
 * code of the same organisation and workflow; the code hash makes a new workflow version a new
 * key. JSON keeps the parts apart whatever characters the ids hold.
 */
export function contextKey(ctx: Pick<StepRunContext, 'orgId' | 'automationId' | 'stepIndex'>, code: string): string {
  return JSON.stringify([ctx.orgId ?? null, ctx.automationId, ctx.stepIndex, codeHash(ctx.orgId ?? '', code)]);
}

function intField(step: WorkflowStep, key: string, min: number, max: number): number | undefined | 'bad' {
  const v = step[key];
  if (v === undefined) return undefined;
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : 'bad';
}

/**
 * A thrown error's text without the frames of the runner and of Node: the message lines,
 * then only frames inside the step's own code (`step.js:<line>`, line 0 being the wrapper).
 */
export function cleanStack(text: string): string {
  const lines = text.split('\n');
  const firstFrame = lines.findIndex((l) => /^\s+at /.test(l));
  if (firstFrame < 0) return text;
  const frames = lines.slice(firstFrame).filter((l) => /step\.js:[1-9]\d*:\d+/.test(l));
  return [...lines.slice(0, firstFrame), ...frames].join('\n');
}

function okResult(run: SandboxRun, declared: string | undefined): { resultType: ResultType; result: string } | string {
  if (run.kind === 'json') return { resultType: 'json', result: run.text };
  if (run.kind === 'undefined') {
    if (declared === 'json') return { resultType: 'json', result: 'null' };
    return { resultType: declared === 'markdown' ? 'markdown' : 'plaintext', result: '' };
  }
  if (declared === 'json') {
    try {
      JSON.parse(run.text);
    } catch {
      return 'The step declares resultType json but returned a string that is not valid JSON';
    }
    return { resultType: 'json', result: run.text };
  }
  return { resultType: declared === 'markdown' ? 'markdown' : 'plaintext', result: run.text };
}

export async function runCodeStep(step: WorkflowStep, ctx: StepRunContext, deps: StepDeps): Promise<ExecutedStep> {
  const code = step.code;
  const timeoutMs = intField(step, 'timeoutMs', 1, MAX_TIMEOUT_MS);
  const memoryMb = intField(step, 'memoryMb', 16, 1024);
  const declared = typeof step.resultType === 'string' ? step.resultType : undefined;
  if (typeof code !== 'string' || code.trim() === '')
    return failed('FAILED', EXIT.invalid, 'Invalid step: code must be a non-empty string', { durationMs: 0 });
  if (timeoutMs === 'bad')
    return failed('FAILED', EXIT.invalid, `Invalid step: timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}`, {
      durationMs: 0,
    });
  if (memoryMb === 'bad')
    return failed('FAILED', EXIT.invalid, 'Invalid step: memoryMb must be an integer from 16 to 1024', {
      durationMs: 0,
    });
  if (deps.signal?.aborted) return stoppedByRun(deps.signal, 0);

  const run = await deps.sandbox.run({
    // A step without an organisation (tests of the engine alone) shares no process with one that has one.
    orgId: ctx.orgId ?? '',
    code,
    inputs: ctx.inputs,
    steps: stepsByIndex(ctx.steps),
    timeoutMs: timeoutMs ?? DEFAULT_TIMEOUT_MS,
    memoryMb,
    contextKey: contextKey(ctx, code),
    signal: deps.signal,
  });
  const base = { durationMs: run.durationMs, logs: run.logs };
  switch (run.outcome) {
    case 'ok': {
      const ok = okResult(run, declared);
      if (typeof ok === 'string')
        return failed('FAILED', EXIT.error, ok, { durationMs: run.durationMs, extra: { logs: run.logs } });
      return { status: 'COMPLETE', exitCode: EXIT.ok, files: run.files, ...ok, ...base };
    }
    case 'error':
      return failed('FAILED', EXIT.error, cleanStack(run.text), { durationMs: run.durationMs, extra: base });
    case 'invalid':
      return failed('FAILED', EXIT.invalid, `Invalid step: the code does not compile: ${run.text}`, {
        durationMs: run.durationMs,
        extra: base,
      });
    case 'timeout':
      return failed(
        'TIMEOUT',
        EXIT.timeout,
        run.text.startsWith('Step timed out')
          ? run.text
          : `Step timed out after ${timeoutMs ?? DEFAULT_TIMEOUT_MS} ms (${run.text})`,
        { durationMs: run.durationMs, extra: base },
      );
    case 'memory':
      return failed('FAILED', EXIT.killed, `Memory limit exceeded: ${run.text}`, {
        durationMs: run.durationMs,
        extra: base,
      });
    case 'aborted':
      return stoppedByRun(deps.signal, run.durationMs, base);
    case 'killed':
      return failed('FAILED', EXIT.killed, `The sandbox process was killed: ${run.text}`, {
        durationMs: run.durationMs,
        extra: base,
      });
    case 'unavailable':
      deps.log.error({ reason: run.text }, 'code step could not reach the sandbox');
      return failed('FAILED', EXIT.error, `The code sandbox is unavailable: ${run.text}`, {
        durationMs: run.durationMs,
        extra: base,
      });
  }
}
