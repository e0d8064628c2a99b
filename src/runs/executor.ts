/**
 * Executes one claimed run: the pinned workflow version's steps in order (spec "States and
 * transitions"): each step is recorded RUNNING then COMPLETE | FAILED | TIMEOUT with its
 * result, exit code, duration and files; the first failing step ends the run (the rest are
 * SKIPPED). The run deadline (definition timeoutMs, else RUN_TIMEOUT_MS) ends it TIMEOUT.
 * What is written when: src/runs/README.md (a RunRecorder writes it).
 */
import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import { newId } from '../kernel/ids.js';
import { contextFromTraceparent, linksTo, markSpanError, withSpan } from '../kernel/tracing.js';
import {
  executeStep,
  type ExecutedStep,
  type PriorStep,
  type SandboxPool,
  type ToolCaller,
  type AgentInvoker,
} from '../engine/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import { stepFilePrefix, type FileCreate } from '../files/index.js';
import type { LeaseKeeper } from './leases.js';
import { PROGRESS_AFTER_MS, RunRecorder } from './recorder.js';
import { pinnedStepList, runInputs, type RunRow } from './runs.js';
import type { Signals } from './signals.js';
import { loadVersion, type PinnedVersion } from '../engine/index.js';
import type { RunStatus } from './states.js';
import type { WriteQueue } from '../storage/write-queue.js';
import {
  children,
  runDuration,
  runsFinished,
  runsInFlight,
  runsStarted,
  secondsSince,
  triggerKind,
} from '../kernel/metrics.js';

const startedOf = children((trigger) => runsStarted.labels(trigger));
const finishedOf = children((status, trigger) => ({
  count: runsFinished.labels(status, trigger),
  duration: runDuration.labels(status, trigger),
}));

export interface ExecutorDeps {
  db: Knex;
  log: Logger;
  sandbox: SandboxPool;
  blobs: BlobStore;
  signals: Signals;
  /** The workers' write queue: every write of a run goes through it (group commit). */
  writes: WriteQueue;
  /** Renews the leases of this process's runs and reports the ones lost. */
  leases: LeaseKeeper;
  workerId: string;
  leaseMs: number;
  /** Step files are kept this long (retention prunes them after). */
  fileTtlMs: number;
  /** The fetch of an organisation's `http` steps (the outbound policy, its own connections); global fetch when absent. */
  fetchFor?: ((orgId: string) => typeof fetch) | undefined;
  /** Tool steps call the gateway through this. */
  callTool?: ToolCaller | undefined;
  /** Agent steps run agent turns through this (src/agents). */
  invokeAgent?: AgentInvoker | undefined;
  /** Called once the steps are done and the finish is queued: the caller may claim its next run meanwhile. */
  onExecuted?: (() => void) | undefined;
}

function parseResult(resultType: string | null, result: string | null): unknown {
  if (result === null) return null;
  if (resultType === 'json') {
    try {
      return JSON.parse(result);
    } catch {
      return result;
    }
  }
  return result;
}

async function loadPinned(db: Knex, run: RunRow): Promise<PinnedVersion | undefined> {
  return loadVersion(db, run.workflow_id, run.workflow_version);
}

/** Stores a step's files (durable before their rows are written) and returns their records. */
async function storeFiles(
  deps: ExecutorDeps,
  run: RunRow,
  stepIndex: number,
  outcome: ExecutedStep,
): Promise<FileCreate[]> {
  const records: FileCreate[] = [];
  for (const f of outcome.files) {
    const id = newId('file');
    const blobKey = `${stepFilePrefix(run.id)}/${stepIndex}/${id}`;
    // A new key, read only once the finish commits its row: written in place (src/kernel/blobs.ts `fresh`).
    const { size } = await deps.blobs.put(blobKey, f.data, { fresh: true });
    records.push({
      id,
      orgId: run.org_id,
      runId: run.id,
      stepIndex,
      kind: 'step',
      filename: f.fileName,
      mimeType: f.mimeType,
      size,
      blobKey,
      expiresAt: new Date(Date.now() + deps.fileTtlMs).toISOString(),
    });
  }
  return records;
}

/**
 * Runs every step of a claimed run and records the terminal state. Resolves once that state
 * committed and the finish signal went out, or with 'RUNNING' when another worker owns the run
 * now (this one wrote nothing more). Rejects only when the store fails the finish.
 */
export function executeRun(deps: ExecutorDeps, run: RunRow): Promise<RunStatus> {
  // The run's span is a child of the span that created the run (its stored traceparent), so an
  // async run, executed later or by another process, stays in the request's trace; a queue run
  // begins a trace of its own, linked to the request that created its batch.
  const opts = { parent: contextFromTraceparent(run.trace_parent), links: linksTo(run.trace_link) };
  return withSpan('run', opts, async (span) => {
    if (span.isRecording())
      span.setAttributes({
        'switchyard.run_id': run.id,
        'switchyard.org_id': run.org_id,
        'switchyard.workflow_id': run.workflow_id,
        'switchyard.workflow_version': Number(run.workflow_version),
        'switchyard.run.attempt': Number(run.attempts),
      });
    const status = await executeClaimedRun(deps, run);
    if (span.isRecording()) {
      span.setAttribute('switchyard.run.status', status);
      if (status === 'FAILED' || status === 'TIMEOUT') markSpanError(span, status);
    }
    return status;
  });
}

async function executeClaimedRun(deps: ExecutorDeps, run: RunRow): Promise<RunStatus> {
  const rlog = deps.log.child({ runId: run.id, automationId: run.workflow_id });
  const trigger = triggerKind(run.started_by);
  const began = performance.now();
  startedOf(trigger).inc();
  const timeoutMs = run.timeout_ms ?? 600_000;
  const deadline = Date.parse(run.started_at ?? new Date().toISOString()) + timeoutMs;
  const abort = new AbortController();
  const deadlineTimer = setTimeout(
    () => abort.abort(new Error('run deadline reached')),
    Math.max(0, deadline - Date.now()),
  );
  const recorder = new RunRecorder(deps, run, () => abort.abort(new Error('lease lost')));
  const attempt = Number(run.attempts);
  deps.leases.hold(run.id, attempt, () => recorder.leaseLost());
  const progressTimer = setTimeout(() => {
    recorder
      .goLive()
      .catch((err: unknown) => rlog.warn({ err }, 'writing run progress failed (tried again with the next step)'));
  }, PROGRESS_AFTER_MS);

  let outcome: { status: RunStatus; error?: string | undefined };
  let finished = false;
  runsInFlight.inc();
  try {
    try {
      outcome = await runSteps(deps, run, { recorder, signal: abort.signal, rlog });
    } finally {
      clearTimeout(deadlineTimer);
      clearTimeout(progressTimer);
    }
    if (!recorder.lost) {
      const commit = recorder.finish(outcome.status, outcome.error);
      deps.onExecuted?.();
      finished = await commit;
    }
  } finally {
    deps.leases.release(run.id, attempt);
    runsInFlight.dec();
  }
  if (!finished) {
    rlog.warn('lease lost: another worker owns this run now');
    await deleteUnrecorded(deps, rlog, recorder.unrecordedBlobKeys());
    return 'RUNNING';
  }
  const finish = finishedOf(outcome.status, trigger);
  finish.count.inc();
  finish.duration.observe(secondsSince(began));
  await deps.signals.runFinished(run.id, outcome.status, recorder.finishedRun);
  rlog.info({ status: outcome.status }, 'run finished');
  return outcome.status;
}

/**
 * The steps in order, each handed to the recorder as it starts and ends; returns the run's
 * terminal state (meaningless once `recorder.lost`). Never throws.
 */
async function runSteps(
  deps: ExecutorDeps,
  run: RunRow,
  { recorder, signal, rlog }: { recorder: RunRecorder; signal: AbortSignal; rlog: Logger },
): Promise<{ status: RunStatus; error?: string }> {
  try {
    const pinned = await loadPinned(deps.db, run);
    if (!pinned) throw new Error(`workflow version ${run.workflow_version} of ${run.workflow_id} no longer exists`);
    const { definition } = pinned;
    const inputs = runInputs(run);
    const prior: PriorStep[] = [];
    for (const row of pinnedStepList(pinned).map((s, i) => ({
      step_index: i,
      name: s.name,
      stepVersion: s.stepVersion,
    }))) {
      const step = definition.steps[row.step_index]!;
      if (signal.aborted) return { status: 'TIMEOUT', error: 'The run exceeded its execution time limit' };
      await recorder.stepStarted(row.step_index, prior.length + 1, row);
      if (recorder.lost) break;
      const outcome = await withSpan('step', {}, async (span) => {
        if (span.isRecording())
          span.setAttributes({ 'switchyard.step.index': row.step_index, 'switchyard.step.type': step.type });
        const done = await executeStep(
          step,
          {
            inputs,
            steps: prior,
            runId: run.id,
            automationId: run.workflow_id,
            stepIndex: row.step_index,
            orgId: run.org_id,
          },
          {
            sandbox: deps.sandbox,
            log: rlog,
            signal,
            fetchImpl: deps.fetchFor?.(run.org_id),
            callTool: deps.callTool,
            invokeAgent: deps.invokeAgent,
          },
        );
        if (span.isRecording()) {
          span.setAttribute('switchyard.step.status', done.status);
          if (done.status !== 'COMPLETE') markSpanError(span, done.status);
        }
        return done;
      });
      if (recorder.lost) break;
      const files = await storeFiles(deps, run, row.step_index, outcome);
      await recorder.stepFinished(
        row.step_index,
        {
          status: outcome.status,
          resultType: outcome.resultType,
          result: outcome.result,
          exitCode: outcome.exitCode,
          durationMs: outcome.durationMs,
          logs: outcome.logs,
        },
        files,
      );
      prior.push({
        stepIndex: row.step_index,
        name: row.name,
        status: outcome.status,
        resultType: outcome.resultType,
        result: parseResult(outcome.resultType, outcome.result),
        exitCode: outcome.exitCode,
      });
      if (outcome.status !== 'COMPLETE') {
        // A step over its own or the run's time limit ends the run TIMEOUT; any other failure FAILED.
        return {
          status: outcome.status === 'TIMEOUT' ? 'TIMEOUT' : 'FAILED',
          error: `Step ${row.step_index} (${row.name}) ${outcome.status === 'TIMEOUT' ? 'timed out' : 'failed'}: ${outcome.result.slice(0, 500)}`,
        };
      }
    }
    return { status: 'COMPLETE' };
  } catch (err) {
    rlog.error({ err }, 'run failed outside its steps');
    return { status: 'FAILED', error: err instanceof Error ? err.message : String(err) };
  }
}

/** Blobs whose rows this worker will never write: the run's new owner starts its files afresh. */
async function deleteUnrecorded(deps: ExecutorDeps, rlog: Logger, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await deps.blobs
      .delete(key)
      .catch((err: unknown) =>
        rlog.warn({ err, key }, 'could not delete the blob of a lost run (an orphan until the run is pruned)'),
      );
  }
}
