/**
 * A step's textual result as a file of `resultUrls` (openapi/triggers.yaml getRunResults
 * decision): `result.md` (markdown), `result.txt` (plaintext), `result.json` (json) and
 * `error.txt` (error results). Nothing is written to the blob store when a step finishes (run
 * execution stays one row update per step): the file is served on demand from the step row by
 * downloadRunFile, under an id derived from the run id, the step index and the result kind.
 *
 * The id is opaque to clients. It is told apart from stored file ids by its prefix (stored
 * ids are `file_…`, and recordFile refuses this prefix), and it is only parsed after its
 * signature has been verified (openapi/run-files.yaml decision), so the run and step it names
 * are always ones the server itself signed: editing the run id or the step index in a URL
 * breaks the signature.
 */
import type { Knex } from 'knex';
import { isTerminal } from './states.js';
import type { StepRow } from './runs.js';
import { isResultFileId, RESULT_FILE_ID_PREFIX } from '../files/index.js';

export { isResultFileId };

interface ResultKind {
  /** Short token in the id; binds a signed URL to the result type it was issued for. */
  token: string;
  fileName: string;
  mimeType: string;
}

/** By the step's resultType (engine ResultType); other types have no result file. */
const KINDS: Readonly<Record<string, ResultKind>> = {
  markdown: { token: 'md', fileName: 'result.md', mimeType: 'text/markdown' },
  plaintext: { token: 'txt', fileName: 'result.txt', mimeType: 'text/plain' },
  json: { token: 'json', fileName: 'result.json', mimeType: 'application/json' },
  error: { token: 'err', fileName: 'error.txt', mimeType: 'text/plain' },
};

/** `result_<runId>_<stepIndex>_<token>`; run ids are `run_<hex>` (at most 128 characters in all). */
const ID_PATTERN = /^result_([A-Za-z0-9_]{1,100})_(0|[1-9][0-9]{0,5})_(md|txt|json|err)$/;

export interface StepResultFile {
  id: string;
  fileName: string;
  mimeType: string;
  /** The step's result text, served as UTF-8. */
  text: string;
  /** UTF-8 length of `text` in bytes. */
  size: number;
}

/** Only a finished step has a result (a RUNNING step's row has none yet). */
function kindOf(step: Pick<StepRow, 'status' | 'result_type' | 'result'>): ResultKind | undefined {
  if (!isTerminal(step.status) || step.result === null || step.result_type === null) return undefined;
  return Object.hasOwn(KINDS, step.result_type) ? KINDS[step.result_type] : undefined;
}

/** The result file of a step, or undefined when the step has no textual result (yet). */
export function stepResultFile(
  step: Pick<StepRow, 'run_id' | 'step_index' | 'status' | 'result_type' | 'result'>,
): StepResultFile | undefined {
  const kind = kindOf(step);
  if (!kind || step.result === null) return undefined;
  return {
    id: `${RESULT_FILE_ID_PREFIX}${step.run_id}_${Number(step.step_index)}_${kind.token}`,
    fileName: kind.fileName,
    mimeType: kind.mimeType,
    text: step.result,
    size: Buffer.byteLength(step.result, 'utf8'),
  };
}

/**
 * The result file a (signature-verified) id names, read from the step row now; undefined
 * (404 file_not_found) when the run was pruned, the step has no result, or its result is no
 * longer of the kind the URL was issued for (a recovered run re-ran the step).
 */
export async function loadResultFile(db: Knex, fileId: string): Promise<StepResultFile | undefined> {
  const m = ID_PATTERN.exec(fileId);
  if (!m) return undefined;
  const [, runId, index] = m as unknown as [string, string, string];
  const row = (await db('run_steps')
    .where({ run_id: runId, step_index: Number(index) })
    .first('run_id', 'step_index', 'status', 'result_type', 'result')) as
    Pick<StepRow, 'run_id' | 'step_index' | 'status' | 'result_type' | 'result'> | undefined;
  const file = row && stepResultFile(row);
  // The kind token must still match: the id names this run, this step and this result type.
  return file && file.id === fileId ? file : undefined;
}
