/**
 * File records over the `files` table (migration 001): trigger attachments, step result
 * files and uploads, each pointing at a blob in the BlobStore. Every query is scoped by
 * org_id except `getFile`, which serves the download endpoint: that
 * endpoint is authorised by the URL's signature (openapi/run-files.yaml), not by an org token.
 */
import type { Knex } from 'knex';
import { newId, nowIso } from '../kernel/ids.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { WriteBatch } from '../storage/write-queue.js';

/**
 * Ids of a run's step result files (src/runs/result-files.ts): read from the step row, never a
 * stored file, so no stored file's id starts with this prefix.
 */
export const RESULT_FILE_ID_PREFIX = 'result_';

export function isResultFileId(fileId: string): boolean {
  return fileId.startsWith(RESULT_FILE_ID_PREFIX);
}

export type FileKind = 'attachment' | 'step' | 'upload' | 'chat' | 'collection';
export const FILE_KINDS: readonly FileKind[] = ['attachment', 'step', 'upload', 'chat', 'collection'];

export interface FileRecord {
  id: string;
  orgId: string;
  runId: string | null;
  stepIndex: number | null;
  kind: FileKind;
  filename: string;
  mimeType: string;
  size: number;
  blobKey: string;
  createdAt: string;
  /** After this instant the file is treated as gone (404 file_not_found); null = kept until pruned. */
  expiresAt: string | null;
}

export interface FileCreate {
  /** Callers that must name the blob before the row exists (attachments) pass the id. */
  id?: string | undefined;
  orgId: string;
  runId?: string | null | undefined;
  stepIndex?: number | null | undefined;
  kind: FileKind;
  filename: string;
  mimeType: string;
  size: number;
  blobKey: string;
  expiresAt?: string | null | undefined;
}

export interface FileRow {
  id: string;
  org_id: string;
  run_id: string | null;
  step_index: number | string | null;
  kind: FileKind;
  filename: string;
  mime_type: string;
  size: number | string;
  blob_key: string;
  created_at: string;
  expires_at: string | null;
}

const MAX_TEXT = 255;

function toRecord(r: FileRow): FileRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    runId: r.run_id,
    stepIndex: r.step_index === null ? null : Number(r.step_index),
    kind: r.kind,
    filename: r.filename,
    mimeType: r.mime_type,
    // PostgreSQL returns bigint as a string.
    size: Number(r.size),
    blobKey: r.blob_key,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

function toRow(f: FileCreate, createdAt: string): FileRow {
  if (!FILE_KINDS.includes(f.kind)) throw new RangeError(`unknown file kind ${String(f.kind)}`);
  // downloadRunFile routes this prefix to step result files (result-files.ts), never to a row.
  if (f.id !== undefined && isResultFileId(f.id))
    throw new RangeError(`file ids must not start with ${RESULT_FILE_ID_PREFIX}`);
  if (!Number.isSafeInteger(f.size) || f.size < 0) throw new RangeError('size must be a non-negative integer');
  if (f.filename.length === 0 || f.filename.length > MAX_TEXT)
    throw new RangeError('filename must be 1 to 255 characters');
  if (f.mimeType.length === 0 || f.mimeType.length > MAX_TEXT)
    throw new RangeError('mimeType must be 1 to 255 characters');
  return {
    id: f.id ?? newId('file'),
    org_id: f.orgId,
    run_id: f.runId ?? null,
    step_index: f.stepIndex ?? null,
    kind: f.kind,
    filename: f.filename,
    mime_type: f.mimeType,
    size: f.size,
    blob_key: f.blobKey,
    created_at: createdAt,
    expires_at: f.expiresAt ?? null,
  };
}

/** Inserts one file record (pass a transaction as `db` to join the caller's). */
export async function recordFile(db: Knex, input: FileCreate): Promise<FileRecord> {
  const [record] = await recordFiles(db, [input]);
  return record!;
}

/** Inserts several file records in one statement. */
export async function recordFiles(db: Knex, inputs: readonly FileCreate[]): Promise<FileRecord[]> {
  if (inputs.length === 0) return [];
  const rows = fileRows(inputs);
  await db('files').insert(rows);
  return rows.map(toRecord);
}

/**
 * The validated `files` rows for `inputs`, for a caller that inserts them later in its own
 * statement (a run's step files go in with its finish, src/runs/recorder.ts).
 */
export function fileRows(inputs: readonly FileCreate[], createdAt = nowIso()): FileRow[] {
  return inputs.map((f) => toRow(f, createdAt));
}

/**
 * The file behind a signed download URL, whatever its organisation: only the download
 * endpoint uses this, after the signature (which names this file id) has been verified.
 */
export async function getFile(db: Knex, fileId: string): Promise<FileRecord | undefined> {
  const row = (await db('files').where({ id: fileId }).first()) as FileRow | undefined;
  return row ? toRecord(row) : undefined;
}

/** A file of one organisation. */
export async function findFile(db: Knex, orgId: string, fileId: string): Promise<FileRecord | undefined> {
  const row = (await db('files').where({ org_id: orgId, id: fileId }).first()) as FileRow | undefined;
  return row ? toRecord(row) : undefined;
}

/**
 * Records of rows written already, in listRunFiles's order (step files: by step, then created,
 * then id), for a caller that knows the rows it committed (recorder.ts `finishedRun`).
 */
export function fileRecords(rows: readonly FileRow[]): FileRecord[] {
  const key = (r: FileRow) => [Number(r.step_index ?? -1), r.created_at, r.id] as const;
  return [...rows]
    .sort((x, y) => {
      const [a, b] = [key(x), key(y)];
      return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
    })
    .map(toRecord);
}

/** A run's files: attachments first, then step files by step index, each in creation order. */
export async function listRunFiles(db: Knex, orgId: string, runId: string): Promise<FileRecord[]> {
  const rows = (await db('files')
    .where({ org_id: orgId, run_id: runId })
    .orderByRaw('step_index IS NOT NULL')
    .orderBy([{ column: 'step_index' }, { column: 'created_at' }, { column: 'id' }])) as FileRow[];
  return rows.map(toRecord);
}

/**
 * Sets run_id on files stored before their run existed (trigger attachments). Only files of
 * this organisation that are not attached yet are touched; returns how many were.
 */
export async function attachFilesToRun(
  db: Knex,
  orgId: string,
  fileIds: readonly string[],
  runId: string,
): Promise<number> {
  if (fileIds.length === 0) return 0;
  return db('files')
    .where({ org_id: orgId })
    .whereNull('run_id')
    .whereIn('id', [...fileIds])
    .update({ run_id: runId });
}

/** Deletes rows first, then blobs: a blob whose delete fails is an orphan, never a dangling row. */
async function deleteRecords(db: Knex, blobs: BlobStore, orgId: string, rows: FileRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const count = await db('files')
    .where({ org_id: orgId })
    .whereIn(
      'id',
      rows.map((r) => r.id),
    )
    .delete();
  for (const r of rows) await blobs.delete(r.blob_key);
  return count;
}

/**
 * Deletes a run's file records and their blobs (retention, run deletion), and then its step-file
 * folder. That folder can still hold blobs with no row: an attempt killed (-9) after `blobs.put`
 * and before its finish committed (src/runs/README.md). Call this only for a finished run, which
 * no worker writes to any more.
 */
export async function deleteRunFiles(db: Knex, blobs: BlobStore, orgId: string, runId: string): Promise<number> {
  const rows = (await db('files').where({ org_id: orgId, run_id: runId }).select('id', 'blob_key')) as FileRow[];
  const count = await deleteRecords(db, blobs, orgId, rows);
  await blobs.deletePrefix(stepFilePrefix(runId));
  return count;
}

/** Where a run's step files are stored: `runs/<runId>/<stepIndex>/<fileId>`. */
export function stepFilePrefix(runId: string): string {
  return `runs/${runId}`;
}

/** Deletes the named files of one organisation and their blobs. */
export async function deleteFiles(
  db: Knex,
  blobs: BlobStore,
  orgId: string,
  fileIds: readonly string[],
): Promise<number> {
  if (fileIds.length === 0) return 0;
  const rows = (await db('files')
    .where({ org_id: orgId })
    .whereIn('id', [...fileIds])
    .select('id', 'blob_key')) as FileRow[];
  return deleteRecords(db, blobs, orgId, rows);
}

/**
 * Maintenance sweep across organisations: attachments never attached to a run (the process
 * stopped between storing them and inserting the run) and created before `createdBefore`.
 */
export async function deleteUnattachedAttachments(db: Knex, blobs: BlobStore, createdBefore: string): Promise<number> {
  const rows = (await db('files')
    .where({ kind: 'attachment' })
    .whereNull('run_id')
    .where('created_at', '<', createdBefore)
    .select('id', 'org_id', 'blob_key')) as FileRow[];
  let count = 0;
  const byOrg = new Map<string, FileRow[]>();
  for (const r of rows) byOrg.set(r.org_id, [...(byOrg.get(r.org_id) ?? []), r]);
  for (const [orgId, list] of byOrg) count += await deleteRecords(db, blobs, orgId, list);
  return count;
}

export interface FileSummary {
  id: string;
  filename: string;
  mimeType: string;
  size: number;
}

/** The organisation's files among `fileIds`, in the order given; ids with no file are left out. */
export async function fileSummaries(db: Knex, orgId: string, fileIds: readonly string[]): Promise<FileSummary[]> {
  if (fileIds.length === 0) return [];
  const byId = new Map<string, FileSummary>();
  for (let i = 0; i < fileIds.length; i += 500) {
    const rows = (await db('files')
      .where({ org_id: orgId })
      .whereIn('id', fileIds.slice(i, i + 500))
      .select('id', 'filename', 'mime_type', 'size')) as {
      id: string;
      filename: string;
      mime_type: string;
      size: number | string;
    }[];
    for (const r of rows)
      byId.set(r.id, { id: r.id, filename: r.filename, mimeType: r.mime_type, size: Number(r.size) });
  }
  return fileIds.flatMap((id) => byId.get(id) ?? []);
}

/** Appends file rows to a write batch, inserted before its commit (a run's finish, src/runs/recorder.ts). */
export function insertFileRowsLater(batch: Pick<WriteBatch, 'insertLater'>, rows: readonly FileRow[]): void {
  if (rows.length) batch.insertLater('files', rows as unknown as Record<string, unknown>[]);
}

/** Inserts file rows in the caller's transaction (a run's progress write). */
export async function insertFileRows(trx: Knex, rows: readonly FileRow[]): Promise<void> {
  if (rows.length) await trx('files').insert(rows);
}
