/**
 * The spec's run views: status response, results response and the synchronous results body
 * ("Status response (polling)", "Results response (polling)", "Synchronous results body").
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import { loadVersion } from '../engine/index.js';
import { listRunFiles, signFileUrl, type FileRecord } from '../files/index.js';
import { stepResultFile } from './result-files.js';
import { listSteps, pinnedStepList, withPlannedSteps, runInputs, type RunRow, type StepRow } from './runs.js';

/** Result files are downloadable for 24 h from the moment a view is produced (openapi decision). */
const RESULT_URL_TTL_S = 24 * 3600;

export interface DesignatedOutputSpec {
  stepIndex: number;
  fileName: string;
}

/** Every step of a run: started ones from their rows, the others as its pinned version plans them. */
async function stepsOf(db: Knex, run: RunRow): Promise<StepRow[]> {
  const [rows, version] = await Promise.all([
    listSteps(db, run.id),
    loadVersion(db, run.workflow_id, run.workflow_version),
  ]);
  return version ? withPlannedSteps(run, rows, pinnedStepList(version)) : rows;
}

export async function statusView(db: Knex, run: RunRow) {
  const steps = await stepsOf(db, run);
  return {
    automationId: run.workflow_id,
    runId: run.id,
    status: run.status,
    stepStatus: Object.fromEntries(steps.map((s) => [String(s.step_index), s.status])),
    stepInfo: Object.fromEntries(
      steps.map((s) => [
        String(s.step_index),
        {
          status: s.status,
          name: s.name,
          // Steps run in order; a step not reached yet reports its planned position.
          executionOrder: s.execution_order ?? s.step_index + 1,
        },
      ]),
    ),
  };
}

interface RunContext {
  run: RunRow;
  steps: StepRow[];
  files: FileRecord[];
  name: string;
}

/** What a run's views read beside its row: its step rows, its files and its pinned version. */
export type RunParts = [StepRow[], FileRecord[], Awaited<ReturnType<typeof loadVersion>>];

/**
 * Starts the reads of a run's parts. The ids are all they need, so a caller that knows them can
 * start these reads beside the read of the run row itself (src/triggers/call.ts, once a sync
 * call's run finished: its parts committed with its terminal state).
 */
export function readRunParts(
  db: Knex,
  run: Pick<RunRow, 'id' | 'org_id' | 'workflow_id' | 'workflow_version'>,
): Promise<RunParts> {
  // One round trip's worth of waiting: the three reads run side by side.
  return Promise.all([
    listSteps(db, run.id),
    listRunFiles(db, run.org_id, run.id),
    loadVersion(db, run.workflow_id, run.workflow_version),
  ]);
}

async function load(db: Knex, run: RunRow, parts: Promise<RunParts> = readRunParts(db, run)): Promise<RunContext> {
  const [rows, files, pinned] = await parts;
  const steps = pinned ? withPlannedSteps(run, rows, pinnedStepList(pinned)) : rows;
  return { run, steps, files, name: pinned?.definition.name ?? '' };
}

function designated(config: Config, ctx: RunContext, spec: DesignatedOutputSpec | null | undefined) {
  if (!spec) return undefined;
  const file = ctx.files.find(
    (f) => f.kind === 'step' && f.stepIndex === spec.stepIndex && f.filename === spec.fileName,
  );
  if (!file) return undefined;
  return {
    url: signFileUrl(config, file.id, RESULT_URL_TTL_S),
    fileName: file.filename,
    mimeType: file.mimeType,
    size: file.size,
  };
}

/** Fields both the results response and the synchronous body carry (spec). */
function common(ctx: RunContext) {
  const { run } = ctx;
  return {
    automationId: run.workflow_id,
    automationVersion: run.workflow_version,
    automationName: ctx.name,
    id: run.id,
    type: 'TRIGGER' as const,
    started: run.started_at ?? run.created_at,
    status: run.status,
  };
}

/** Steps that ran (or are running), in order. */
const ranSteps = (ctx: RunContext) => ctx.steps.filter((s) => s.status !== 'PENDING' && s.status !== 'SKIPPED');

function withOutput<T extends object>(body: T, out: ReturnType<typeof designated>): T {
  return out ? { ...body, designatedOutput: out } : body;
}

type ResultUrl = { url: string; mimeType: string; size: number };

/**
 * A step's `resultUrls` (getRunResults decisions): its textual result as result.md /
 * result.txt / result.json / error.txt, served from the step row, then every file it wrote;
 * a written file with the same name wins.
 */
function resultUrls(config: Config, ctx: RunContext, step: StepRow): Record<string, ResultUrl> {
  // A Map, then fromEntries: a written file may be named anything, "__proto__" included.
  const urls = new Map<string, ResultUrl>();
  const result = stepResultFile(step);
  if (result)
    urls.set(result.fileName, {
      url: signFileUrl(config, result.id, RESULT_URL_TTL_S),
      mimeType: result.mimeType,
      size: result.size,
    });
  for (const f of ctx.files) {
    if (f.kind === 'step' && f.stepIndex === step.step_index)
      urls.set(f.filename, { url: signFileUrl(config, f.id, RESULT_URL_TTL_S), mimeType: f.mimeType, size: f.size });
  }
  return Object.fromEntries(urls);
}

export async function resultsView(db: Knex, config: Config, run: RunRow, output?: DesignatedOutputSpec | null) {
  const ctx = await load(db, run);
  return withOutput(
    {
      ...common(ctx),
      results: ranSteps(ctx).map((s) => ({
        stepIndex: s.step_index,
        stepVersion: s.step_version,
        resultUrls: resultUrls(config, ctx, s),
        exitCode: s.exit_code ?? 0,
        duration: s.duration_ms ?? 0,
      })),
    },
    designated(config, ctx, output),
  );
}

/** `parts`: the run's parts, read already (readRunParts) once the run was terminal. */
export async function syncView(
  db: Knex,
  config: Config,
  run: RunRow,
  { output, parts }: { output?: DesignatedOutputSpec | null | undefined; parts?: Promise<RunParts> | undefined } = {},
) {
  const ctx = await load(db, run, parts);
  return withOutput(
    {
      ...common(ctx),
      stepMap: Object.fromEntries(ctx.steps.map((s) => [String(s.step_index), s.step_version])),
      inputs: JSON.stringify(runInputs(run)),
      triggerId: run.trigger_id ?? '',
      startedBy: run.started_by ?? 'api_trigger',
      results: ranSteps(ctx).map((s) => ({
        stepIndex: s.step_index,
        stepVersion: s.step_version,
        result: { stepIndex: s.step_index, resultType: s.result_type ?? 'plaintext', result: s.result ?? '' },
        exitCode: s.exit_code ?? 0,
        duration: s.duration_ms ?? 0,
      })),
    },
    designated(config, ctx, output),
  );
}

type FileLink = { fileName: string; url: string; mimeType: string; size: number };

const fileLink = (config: Config, f: FileRecord): FileLink => ({
  fileName: f.filename,
  url: signFileUrl(config, f.id, RESULT_URL_TTL_S),
  mimeType: f.mimeType,
  size: f.size,
});

/**
 * One run for the management API (openapi/management.yaml `getRun`): the summary fields, the
 * inputs, every step of the pinned version with its textual result and written files, and
 * the designated output once written.
 */
export async function detailView(db: Knex, config: Config, run: RunRow, output?: DesignatedOutputSpec | null) {
  const ctx = await load(db, run);
  const out = designated(config, ctx, output);
  return {
    runId: run.id,
    automationId: run.workflow_id,
    automationName: ctx.name,
    automationVersion: Number(run.workflow_version),
    triggerId: run.trigger_id,
    status: run.status,
    startedBy: run.started_by ?? 'api_trigger',
    error: run.error,
    inputs: runInputs(run),
    createdAt: run.created_at,
    startedAt: run.started_at,
    finishedAt: run.finished_at,
    steps: [...ctx.steps]
      .sort((a, b) => a.step_index - b.step_index)
      .map((s) => ({
        stepIndex: s.step_index,
        name: s.name,
        status: s.status,
        stepVersion: s.step_version,
        executionOrder: s.execution_order ?? s.step_index + 1,
        exitCode: s.exit_code,
        durationMs: s.duration_ms === null ? null : Number(s.duration_ms),
        resultType: s.result_type,
        result: s.result,
        startedAt: s.started_at,
        finishedAt: s.finished_at,
        files: ctx.files
          .filter((f) => f.kind === 'step' && f.stepIndex === s.step_index)
          .map((f) => fileLink(config, f)),
      })),
    designatedOutput: out ?? null,
  };
}
