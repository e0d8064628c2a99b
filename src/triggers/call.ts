/**
 * A trigger call (spec endpoints 1 and 2): authenticate the key, find the trigger, build the
 * run inputs, record the run durably, queue it, and answer async (200, body null, run
 * headers) or sync (wait for the run-finished signal up to SYNC_WAIT_MS).
 */
import type { IncomingMessage } from 'node:http';
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import {
  runRows,
  insertRuns,
  findRun,
  type RunRows,
  type RunRow,
  isTerminal,
  readRunParts,
  syncView,
  type RunParts,
  type Finish,
  lookupIdempotent,
  rememberIdempotent,
  IdempotencyRace,
} from '../runs/index.js';
import { loadVersion } from '../engine/index.js';
import type { Signals, GroupCommitter, RunAdoption } from '../runs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { ApiKeyVerifier } from '../auth/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { RunQueue } from '../runs/index.js';
import type { Reply } from '../http/types.js';
import type { TriggerKind } from './triggers.js';
import type { CallTarget, CallTargets } from './target.js';
import { readMultipartTrigger, attachToRun, discardAttachments, type Attachment } from '../files/index.js';
import { checkInputs } from './inputs.js';
import { queryInputs } from './query-inputs.js';

export interface TriggerCall {
  kind: TriggerKind;
  triggerId: string;
  apiKey: string | undefined;
  /** The parsed query string; converted to inputs by the workflow's input schema. */
  query: Record<string, unknown>;
  body: unknown;
  contentType: string | undefined;
  wait: boolean;
  idempotencyKey: string | undefined;
  raw: IncomingMessage;
}

/** What a trigger call reads and writes: keys and targets, attachments, the new run and its finish. */
export interface TriggerCallDeps {
  db: Knex;
  config: Config;
  log: Logger;
  apiKeys: Pick<ApiKeyVerifier, 'verify'>;
  callTargets: Pick<CallTargets, 'get'>;
  blobs: BlobStore;
  signals: Pick<Signals, 'waitForFinish'>;
  runWriter: Pick<GroupCommitter, 'add'>;
  queue: Pick<RunQueue, 'enqueue'>;
  /** A new run handed straight to an idle run consumer of this process, when one is. */
  adoptRun?: ((orgId: string) => RunAdoption | undefined) | undefined;
}

/** Credentials first, so a caller without a valid key never learns whether a trigger exists. */
async function authorise(
  services: TriggerCallDeps,
  call: TriggerCall,
): Promise<{ orgId: string; trigger: CallTarget }> {
  if (!call.apiKey) throw new AppError('ERR_AUTH_MISSING_API_KEY');
  const key = await services.apiKeys.verify(call.apiKey);
  if (!key) throw new AppError('ERR_AUTH_INVALID_API_KEY');
  const trigger = await services.callTargets.get(key.orgId, call.triggerId);
  if (!trigger || trigger.kind !== call.kind) throw new AppError('ERR_TRIGGER_NOT_FOUND');
  if (!trigger.enabled) throw new AppError('ERR_TRIGGER_DISABLED');
  return { orgId: key.orgId, trigger };
}

/** Query pairs become inputs; body fields win on conflict (openapi/triggers.yaml decision). */
function mergeInputs(query: Record<string, unknown>, body: unknown): Record<string, unknown> {
  if (body === undefined || body === null || body === '') return { ...query };
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('ERR_REQUEST_INVALID', { message: 'The request body must be a JSON object (or form fields)' });
  }
  return { ...query, ...(body as Record<string, unknown>) };
}

function runHeaders(run: { runId: string; automationId: string; replay: boolean }): Record<string, string> {
  const h: Record<string, string> = { 'X-Pf-Run-Id': run.runId, 'X-Pf-Automation-Id': run.automationId };
  if (run.replay) h['Idempotent-Replay'] = 'true';
  return h;
}

interface Answer {
  orgId: string;
  runId: string;
  trigger: CallTarget;
  wait: boolean;
  /** The run-finished wait started before a new run was queued; absent for a replay. */
  waiting?: Promise<Finish | undefined> | undefined;
  /** The workflow version a new run pinned (with `waiting`). */
  version?: number | undefined;
  /** The new run has attachments (files the executor does not know of). */
  attached?: boolean;
  replay: boolean;
}

/** A terminal run and its parts: read beside its row, or (undefined) read by syncView after it. */
interface Result {
  run: RunRow;
  parts?: Promise<RunParts> | undefined;
}

/**
 * The one waiter of a sync call: the run's terminal state within SYNC_WAIT_MS, read in one of
 * three ways — as this process's finish left it (a new run executed here with no attachments:
 * nothing is read again), its row with its parts read beside it (a new run whose finish was
 * signalled: its parts committed with its terminal state), or its row alone (a replay already
 * terminal, or a finish that was not signalled). Undefined: not terminal within the wait.
 */
async function waitForResult(
  services: TriggerCallDeps,
  { orgId, runId, trigger, waiting, version, attached }: Answer,
): Promise<Result | undefined> {
  const { db, config } = services;
  // A run created by this call is known to be PENDING: wait for its signal straight away.
  if (!waiting) {
    const run = await findRun(db, orgId, runId);
    if (run && isTerminal(run.status)) return { run };
  }
  const signalled = await (waiting ?? services.signals.waitForFinish(runId, config.syncWaitMs));
  // Executed in this process, and its finish wrote it whole: answered as that finish left it.
  const finished = version !== undefined && !attached ? signalled?.finished?.() : undefined;
  if (finished) {
    const pinned = loadVersion(db, trigger.automationId, version!);
    return { run: finished.run, parts: Promise.all([finished.steps, finished.files, pinned]) };
  }
  const parts =
    signalled && version !== undefined
      ? readRunParts(db, { id: runId, org_id: orgId, workflow_id: trigger.automationId, workflow_version: version })
      : undefined;
  parts?.catch(() => undefined); // read again by syncView if the row is not terminal after all
  const run = await findRun(db, orgId, runId);
  return run && isTerminal(run.status) ? { run, parts } : undefined;
}

/** Async: body null. Sync: the terminal result, or the timeout body with the same headers (the run goes on). */
async function answer(services: TriggerCallDeps, call: Answer): Promise<Reply> {
  const headers = runHeaders({ runId: call.runId, automationId: call.trigger.automationId, replay: call.replay });
  if (!call.wait) return { status: 200, body: null, headers };
  const result = await waitForResult(services, call);
  if (!result) {
    const seconds = Math.round(services.config.syncWaitMs / 1000);
    return {
      status: 200,
      headers,
      body: {
        status: 'timeout',
        message: `The run did not finish within ${seconds} seconds; poll its status with the X-Pf-Run-Id and X-Pf-Automation-Id headers.`,
      },
    };
  }
  const { run, parts } = result;
  return {
    status: 200,
    headers,
    body: await syncView(services.db, services.config, run, { output: call.trigger.designatedOutput, parts }),
  };
}

export async function callTrigger(services: TriggerCallDeps, call: TriggerCall): Promise<Reply> {
  const { db } = services;
  const { orgId, trigger } = await authorise(services, call);
  if (call.idempotencyKey) {
    const earlier = await lookupIdempotent(db, trigger.triggerId, call.idempotencyKey);
    if (earlier) return answer(services, { orgId, runId: earlier, trigger, wait: call.wait, replay: true });
  }
  const query = queryInputs(call.query, trigger.definition);
  let inputs: Record<string, unknown>;
  let stored: Attachment[] = [];
  if (call.contentType === 'multipart/form-data') {
    const { fields, attachments } = await readMultipartTrigger(call.raw, {
      blobs: services.blobs,
      db,
      orgId,
      config: services.config,
      log: services.log,
    });
    stored = attachments;
    inputs = {
      ...query,
      ...fields,
      attachments: attachments.map(({ filename, contentType, size, url }) => ({ filename, contentType, size, url })),
    };
  } else {
    inputs = mergeInputs(query, call.body);
  }
  try {
    return await startRun(services, { call, orgId, trigger, inputs, stored });
  } catch (err) {
    // No run: the request's attachments must not stay behind (no partial data on a refusal).
    if (stored.length) await discardAttachments({ blobs: services.blobs, db, orgId }, stored);
    throw err;
  }
}

/** A call authorised, its inputs built and its attachments stored: the run to record and queue. */
interface NewRun {
  call: TriggerCall;
  orgId: string;
  trigger: CallTarget;
  inputs: Record<string, unknown>;
  stored: Attachment[];
}

async function startRun(services: TriggerCallDeps, { call, orgId, trigger, inputs, stored }: NewRun): Promise<Reply> {
  const { db } = services;
  const attachmentIds = stored.map((a) => a.fileId);
  checkInputs(orgId, trigger.definition, inputs);

  const rows: RunRows = runRows({
    orgId,
    automationId: trigger.automationId,
    automationVersion: trigger.version,
    triggerId: trigger.triggerId,
    inputs,
    startedBy: call.kind === 'api' ? 'api_trigger' : 'webhook_trigger',
    timeoutMs: trigger.definition.timeoutMs ?? services.config.runTimeoutMs,
  });
  const runId = rows.run.id as string;
  // Listen before the run can finish, so a fast run's signal is never missed.
  const waiting = call.wait ? services.signals.waitForFinish(runId, services.config.syncWaitMs) : undefined;
  // A caller waiting for a plain run, with a consumer idle here: the run is inserted claimed for it.
  const adoption = call.wait && !call.idempotencyKey && !attachmentIds.length ? services.adoptRun?.(orgId) : undefined;
  const claimed = adoption?.claim(rows);
  try {
    if (call.idempotencyKey || attachmentIds.length) {
      await insertRuns(db, [rows], async (trx: Knex.Transaction) => {
        if (call.idempotencyKey)
          await rememberIdempotent(trx, { orgId, triggerId: trigger.triggerId, key: call.idempotencyKey, runId });
        if (attachmentIds.length) await attachToRun(trx, orgId, attachmentIds, runId);
      });
    } else {
      await services.runWriter.add(rows);
    }
  } catch (err) {
    adoption?.cancel();
    if (err instanceof IdempotencyRace)
      return answer(services, { orgId, runId: err.runId, trigger, wait: call.wait, replay: true });
    throw err;
  }
  if (adoption) adoption.start(claimed!);
  else await services.queue.enqueue([runId]);
  return answer(services, {
    orgId,
    runId,
    trigger,
    wait: call.wait,
    waiting,
    version: Number(rows.run.workflow_version),
    attached: attachmentIds.length > 0,
    replay: false,
  });
}
