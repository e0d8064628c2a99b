/**
 * Executes one claimed run: the pinned workflow version's steps in order (spec "States and
 * transitions"): each step is recorded RUNNING then COMPLETE | FAILED | TIMEOUT with its
 * result, exit code, duration and files; the first failing step ends the run (the rest are
 * SKIPPED). The run deadline (definition timeoutMs, else RUN_TIMEOUT_MS) ends it TIMEOUT.
 */
import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import { newId } from '../storage/ids.js';
import { executeStep, type ExecutedStep, type PriorStep, type SandboxPool, type ToolCaller, type AgentInvoker } from '../engine/index.js';
import type { BlobStore } from './blobs.js';
import { recordFile } from './files.js';
import { finishRun, finishStep, pinnedStepList, renewLease, runInputs, skipRemainingSteps, startStep, type RunRow } from './runs.js';
import type { Signals } from './signals.js';
import { loadVersion, type PinnedVersion } from '../engine/index.js';
import type { RunStatus } from './states.js';

export interface ExecutorDeps {
  db: Knex;
  log: Logger;
  sandbox: SandboxPool;
  blobs: BlobStore;
  signals: Signals;
  workerId: string;
  leaseMs: number;
  /** Step files are kept this long (retention prunes them after). */
  fileTtlMs: number;
  /** `http` steps fetch through this (the outbound policy); global fetch when absent. */
  fetchImpl?: typeof fetch | undefined;
  /** Tool steps call the gateway through this. */
  callTool?: ToolCaller | undefined;
  /** Agent steps run agent turns through this (src/agents). */
  invokeAgent?: AgentInvoker | undefined;
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

async function storeFiles(deps: ExecutorDeps, run: RunRow, stepIndex: number, outcome: ExecutedStep): Promise<void> {
  for (const f of outcome.files) {
    const id = newId('file');
    const blobKey = `runs/${run.id}/${stepIndex}/${id}`;
    const { size } = await deps.blobs.put(blobKey, f.data);
    await recordFile(deps.db, {
      id, orgId: run.org_id, runId: run.id, stepIndex, kind: 'step', filename: f.fileName, mimeType: f.mimeType,
      size, blobKey, expiresAt: new Date(Date.now() + deps.fileTtlMs).toISOString(),
    });
  }
}

/** Runs every step of a claimed run and records the terminal state; never throws. */
export async function executeRun(deps: ExecutorDeps, run: RunRow): Promise<RunStatus> {
  const { db, log } = deps;
  const rlog = log.child({ runId: run.id, automationId: run.workflow_id });
  const timeoutMs = run.timeout_ms ?? 600_000;
  const deadline = Date.parse(run.started_at ?? new Date().toISOString()) + timeoutMs;
  const abort = new AbortController();
  const deadlineTimer = setTimeout(() => abort.abort(new Error('run deadline reached')), Math.max(0, deadline - Date.now()));
  let lost = false;
  const leaseTimer = setInterval(() => {
    renewLease(db, run.id, deps.workerId, deps.leaseMs).then(
      (held) => {
        if (!held) {
          lost = true;
          abort.abort(new Error('lease lost'));
        }
      },
      (err: unknown) => rlog.warn({ err }, 'lease renewal failed'),
    );
  }, Math.max(250, Math.floor(deps.leaseMs / 3)));

  let status: RunStatus = 'COMPLETE';
  let error: string | undefined;
  try {
    const pinned = await loadPinned(db, run);
    if (!pinned) throw new Error(`workflow version ${run.workflow_version} of ${run.workflow_id} no longer exists`);
    const { definition } = pinned;
    const inputs = runInputs(run);
    const prior: PriorStep[] = [];
    for (const row of pinnedStepList(pinned).map((s, i) => ({ step_index: i, name: s.name, stepVersion: s.stepVersion }))) {
      const step = definition.steps[row.step_index]!;
      if (abort.signal.aborted) {
        status = 'TIMEOUT';
        error = 'The run exceeded its execution time limit';
        break;
      }
      await startStep(db, run.id, row.step_index, prior.length + 1, row);
      const outcome = await executeStep(step, { inputs, steps: prior, runId: run.id, automationId: run.workflow_id, stepIndex: row.step_index, orgId: run.org_id }, { sandbox: deps.sandbox, log: rlog, signal: abort.signal, fetchImpl: deps.fetchImpl, callTool: deps.callTool, invokeAgent: deps.invokeAgent });
      if (lost) return 'RUNNING';
      await storeFiles(deps, run, row.step_index, outcome);
      await finishStep(db, run.id, row.step_index, {
        status: outcome.status, resultType: outcome.resultType, result: outcome.result, exitCode: outcome.exitCode,
        durationMs: outcome.durationMs, logs: outcome.logs,
      });
      prior.push({ stepIndex: row.step_index, name: row.name, status: outcome.status, resultType: outcome.resultType, result: parseResult(outcome.resultType, outcome.result), exitCode: outcome.exitCode });
      if (outcome.status !== 'COMPLETE') {
        // A step over its own or the run's time limit ends the run TIMEOUT; any other failure FAILED.
        status = outcome.status === 'TIMEOUT' ? 'TIMEOUT' : 'FAILED';
        error = `Step ${row.step_index} (${row.name}) ${outcome.status === 'TIMEOUT' ? 'timed out' : 'failed'}: ${outcome.result.slice(0, 500)}`;
        break;
      }
    }
  } catch (err) {
    status = 'FAILED';
    error = err instanceof Error ? err.message : String(err);
    rlog.error({ err }, 'run failed outside its steps');
  } finally {
    clearTimeout(deadlineTimer);
    clearInterval(leaseTimer);
  }
  if (lost) {
    rlog.warn('lease lost: another worker owns this run now');
    return 'RUNNING';
  }
  if (status !== 'COMPLETE') await skipRemainingSteps(db, run.id);
  if (await finishRun(db, run.id, status, error, deps.workerId)) await deps.signals.runFinished(run.id, status);
  rlog.info({ status }, 'run finished');
  return status;
}
