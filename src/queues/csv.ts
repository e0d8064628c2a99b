/**
 * The streaming core of CSV batch ingest (openapi/queues.yaml: createCsvBatch, listBatchRowErrors).
 * `scanCsv` checks a whole upload in one fast pass before the batch exists (header, UTF-8, row
 * count); `readRows` then parses it with csv-parse in chunks that each end on an exact resume
 * point, so a loader that crashed restarts after its last committed chunk and loses or repeats
 * no row. Both passes use constant memory on files up to 1 GiB: they hold one read chunk and one
 * record, and a record longer than RECORD_HOLD_MAX is not held (see RecordReader).
 */
import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { parse, type Options } from 'csv-parse/sync';

/** Bytes of the file from byte offset `start` to the end. */
export type Opener = (start: number) => NodeJS.ReadableStream | Readable;

/** Data rows a batch may have (createCsvBatch: `too_many_rows`); the header does not count. */
export const CSV_MAX_ROWS = 500_000;

export type CsvHeadErrorCode = 'empty_file' | 'invalid_csv_header' | 'invalid_encoding' | 'too_many_rows';

/** Why a file cannot become a batch; the message is shown to the user as is. */
export class CsvHeadError extends Error {
  constructor(
    readonly code: CsvHeadErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CsvHeadError';
  }
}

export interface CsvHead {
  /** Header names, trimmed: the keys of every row's values. */
  columns: string[];
  /** Byte offset where record 2 starts (after the header's line end). */
  dataStart: number;
  /** Data records that are not blank, malformed ones included (each becomes a row or a row error). */
  totalRows: number;
}

/** Byte offset of the next record to read, and that record's rowNumber. */
export interface ResumePoint {
  offset: number;
  rowNumber: number;
}

export interface CsvRow {
  rowNumber: number;
  values: Record<string, string>;
  /** Byte range of the record in the file, line end included (a queue item keeps this, not a copy). */
  start: number;
  end: number;
}

/** A skipped record (openapi/queues.yaml, BatchRowError). */
export interface CsvRowError {
  rowNumber: number;
  reason: 'column_count' | 'unterminated_quote';
  message: string;
  rawExcerpt: string;
}

export interface CsvChunk {
  rows: CsvRow[];
  errors: CsvRowError[];
  next: ResumePoint;
  done: boolean;
}

/** rawExcerpt is "the first 200 characters of the raw record"; 4 UTF-8 bytes per character at most. */
const EXCERPT_CHARS = 200;
const EXCERPT_BYTES = EXCERPT_CHARS * 4;
/** Column names are short: a longer header is refused rather than held in memory. */
const HEADER_MAX_BYTES = 1024 * 1024;
/** A record in progress is held up to this size; a longer one is re-read on its own once complete. */
const RECORD_HOLD_MAX = 1024 * 1024;

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The format decided in openapi/queues.yaml. RecordScanner finds the record ends csv-parse finds
 * with these options; readRows checks that they agree on every region it parses.
 * - record_delimiter: LF or CRLF; a lone CR is data (so a line holding only a CR is blank).
 * - relax_quotes: a quote inside an unquoted field, or text after a closing quote, is kept as
 *   text (as spreadsheets do) instead of failing the whole file; only the two row-error reasons
 *   of BatchRowError exist.
 * - bom: false: scanCsv skips the BOM by offset, and a resumed read never starts at byte 0.
 */
const PARSE_OPTIONS: Options = {
  bom: false,
  delimiter: ',',
  quote: '"',
  escape: '"',
  record_delimiter: ['\r\n', '\n'],
  relax_quotes: true,
  relax_column_count: true,
  skip_empty_lines: false,
};

/**
 * Reads the whole file once: header, UTF-8 and the count of data rows (createCsvBatch validation).
 * The first problem in file order is thrown as a CsvHeadError; on abort, an error named AbortError.
 */
export async function scanCsv(open: Opener, opts: { maxRows?: number; signal?: AbortSignal } = {}): Promise<CsvHead> {
  const maxRows = opts.maxRows ?? CSV_MAX_ROWS;
  const source = openSource(open, 0, opts.signal);
  try {
    const first = await source.readAtLeast(BOM.length);
    const bom = first.subarray(0, BOM.length).equals(BOM);
    const head = new HeadScan(bom ? BOM.length : 0);
    const utf8 = new Utf8Check();
    for (let chunk: Buffer | undefined = bom ? first.subarray(BOM.length) : first; chunk; chunk = await source.read()) {
      const bad = utf8.check(chunk);
      head.feed(bad < 0 ? chunk : chunk.subarray(0, bad));
      if (bad >= 0) throw head.invalidEncoding();
    }
    if (utf8.truncated) throw head.invalidEncoding();
    return head.finish(maxRows);
  } finally {
    source.close();
  }
}

/** Header checks and record counting for scanCsv, in file order so the first problem is reported. */
class HeadScan {
  private readonly scanner: RecordScanner;
  private readonly headerBytes: Buffer[] = [];
  private headerSize = 0;
  private phase: 'header' | 'blank-first' | 'data' = 'header';
  private columns: string[] = [];
  private dataStart = 0;

  constructor(start: number) {
    this.scanner = new RecordScanner(start);
  }

  feed(buf: Buffer): void {
    if (this.phase === 'header') {
      const used = this.scanner.scan(buf, { oneRecord: true });
      this.headerSize += used;
      if (this.headerSize <= HEADER_MAX_BYTES) this.headerBytes.push(buf.subarray(0, used));
      if (this.scanner.records === 0) return;
      if (this.scanner.filled === 0) {
        this.phase = 'blank-first';
      } else {
        this.columns = this.checkHeader();
        this.dataStart = this.scanner.recordStart;
        this.phase = 'data';
      }
      buf = buf.subarray(used);
    }
    this.scanner.scan(buf);
    if (this.phase === 'blank-first' && this.scanner.filled > 0) throw blankFirstLine();
  }

  /**
   * The scanner stopped just before the first invalid byte, so the record it is in holds it. A
   * blank line 1 comes first in the file, so it is the error reported.
   */
  invalidEncoding(): CsvHeadError {
    if (this.phase === 'blank-first') return blankFirstLine();
    return new CsvHeadError(
      'invalid_encoding',
      `The file is not valid UTF-8: row ${this.scanner.records + 1} has an invalid byte sequence. Save the file with UTF-8 encoding and upload it again.`,
    );
  }

  finish(maxRows: number): CsvHead {
    const unterminated = this.scanner.finish();
    if (this.scanner.filled === 0) throw new CsvHeadError('empty_file', 'The file is empty.');
    if (this.phase === 'blank-first') throw blankFirstLine();
    if (this.phase === 'header') {
      if (unterminated)
        throw new CsvHeadError('invalid_csv_header', 'The header has a quoted field whose closing quote is missing.');
      this.columns = this.checkHeader();
    }
    const totalRows = this.scanner.filled - 1;
    if (totalRows === 0) throw new CsvHeadError('invalid_csv_header', 'The file has a header but no data rows.');
    if (totalRows > maxRows)
      throw new CsvHeadError(
        'too_many_rows',
        `CSV batches are limited to ${maxRows} rows; this file has ${totalRows}.`,
      );
    return { columns: this.columns, dataStart: this.dataStart, totalRows };
  }

  /** Parsed by csv-parse, like the data rows, so quoting rules are the same. */
  private checkHeader(): string[] {
    if (this.headerSize > HEADER_MAX_BYTES)
      throw new CsvHeadError('invalid_csv_header', `The header is longer than ${HEADER_MAX_BYTES} bytes.`);
    const fields = parse(Buffer.concat(this.headerBytes), PARSE_OPTIONS)[0] ?? [''];
    if (fields.length === 1) {
      const only = fields[0] ?? '';
      const guess = only.includes(';') ? "';'" : only.includes('\t') ? 'tab' : undefined;
      if (guess)
        throw new CsvHeadError(
          'invalid_csv_header',
          `The file seems to use ${guess} as its delimiter; only comma-separated files are accepted.`,
        );
    }
    const names = fields.map((f) => f.trim());
    const seen = new Map<string, number>();
    for (const [i, name] of names.entries()) {
      if (!name)
        throw new CsvHeadError(
          'invalid_csv_header',
          `Column ${i + 1} of the header has no name; every column needs a name.`,
        );
      const first = seen.get(name);
      if (first !== undefined)
        throw new CsvHeadError(
          'invalid_csv_header',
          `The header names "${name}" twice (columns ${first + 1} and ${i + 1}); column names must be unique.`,
        );
      seen.set(name, i);
    }
    return names;
  }
}

function blankFirstLine(): CsvHeadError {
  return new CsvHeadError(
    'invalid_csv_header',
    'Line 1 is blank; the first line must be the header naming the columns.',
  );
}

/**
 * Parses data records from `from` on, in chunks of at most `chunkRows` rows and row errors; each
 * chunk's `next` is where the following chunk starts, and the last chunk has `done: true` (it may
 * hold nothing). A chunk is yielded once a further row or row error is known to follow it, so
 * `done` is never a guess. Reads ahead one region of the file (about one read chunk), whatever
 * `chunkRows` is. On abort the generator throws an error named AbortError. With `values: false`
 * rows carry an empty `values` (their byte ranges only).
 */
export async function* readRows(
  open: Opener,
  opts: { columns: string[]; from: ResumePoint; chunkRows: number; signal?: AbortSignal; values?: boolean },
): AsyncGenerator<CsvChunk> {
  const { columns, chunkRows, signal } = opts;
  if (!Number.isInteger(chunkRows) || chunkRows < 1) throw new RangeError('chunkRows must be a positive integer');
  // A caller that keeps only byte ranges (the batch loader) skips building an object per row.
  const toValues = opts.values === false ? () => NO_VALUES : valuesBuilder(columns);
  const reader = new RecordReader(open, opts.from.offset, signal);
  let next: ResumePoint = { ...opts.from };
  let rows: CsvRow[] = [];
  let errors: CsvRowError[] = [];
  try {
    for (let region = await reader.next(); region; region = await reader.next()) {
      throwIfAborted(signal);
      if (region.kind === 'unterminated') {
        if (rows.length + errors.length === chunkRows) {
          yield { rows, errors, next, done: false };
          [rows, errors] = [[], []];
          throwIfAborted(signal);
        }
        const rawExcerpt = excerpt(region.head, 0, region.head.length);
        errors.push({
          rowNumber: next.rowNumber,
          reason: 'unterminated_quote',
          message: 'A quoted field is not closed before the end of the file.',
          rawExcerpt,
        });
        next = { offset: region.end, rowNumber: next.rowNumber + 1 };
        continue;
      }
      const { bytes, records, ends } = region;
      for (let r = 0; r < records.length; r++) {
        const record = records[r]!;
        const start = next.offset - region.start;
        const end = ends[r]! - region.start;
        if (!isBlank(bytes, start, end)) {
          if (rows.length + errors.length === chunkRows) {
            yield { rows, errors, next, done: false };
            [rows, errors] = [[], []];
            throwIfAborted(signal);
          }
          if (record.length === columns.length)
            rows.push({ rowNumber: next.rowNumber, values: toValues(record), start: next.offset, end: ends[r]! });
          else errors.push(columnCountError(next.rowNumber, record.length, columns.length, { bytes, start, end }));
        }
        next = { offset: ends[r]!, rowNumber: next.rowNumber + 1 };
      }
    }
    throwIfAborted(signal);
    yield { rows, errors, next, done: true };
  } finally {
    reader.close();
  }
}

const NO_VALUES: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * The fields of the records in `bytes` (whole records cut from the file, e.g. a queue item's byte
 * range), parsed with the options readRows uses.
 */
export function parseRecords(bytes: Buffer): string[][] {
  return parse(bytes, PARSE_OPTIONS) as string[][];
}

/** A plain object per row, except that a column named __proto__ must stay an own property. */
export function valuesBuilder(columns: string[]): (record: string[]) => Record<string, string> {
  const n = columns.length;
  if (columns.includes('__proto__')) {
    return (record) => Object.fromEntries(columns.map((c, i) => [c, record[i]!]));
  }
  return (record) => {
    const values: Record<string, string> = {};
    for (let i = 0; i < n; i++) values[columns[i]!] = record[i]!;
    return values;
  };
}

function columnCountError(
  rowNumber: number,
  count: number,
  expected: number,
  { bytes, start, end }: { bytes: Buffer; start: number; end: number },
): CsvRowError {
  let stop = end;
  if (stop > start && bytes[stop - 1] === LF) stop -= stop - 1 > start && bytes[stop - 2] === CR ? 2 : 1;
  const plural = (n: number) => `${n} column${n === 1 ? '' : 's'}`;
  return {
    rowNumber,
    reason: 'column_count',
    message: `Row has ${plural(count)}; the header has ${expected}.`,
    rawExcerpt: excerpt(bytes, start, stop),
  };
}

/** First EXCERPT_CHARS characters (code points, as JSON Schema's maxLength counts) of bytes[start, stop). */
function excerpt(bytes: Buffer, start: number, stop: number): string {
  const text = bytes.toString('utf8', start, Math.min(stop, start + EXCERPT_BYTES));
  return Array.from(text).slice(0, EXCERPT_CHARS).join('');
}

/** A blank line: nothing, or only a CR, before its LF (or before the end of the file). */
function isBlank(bytes: Buffer, start: number, end: number): boolean {
  const n = end - start;
  if (n === 1) return bytes[start] === LF || bytes[start] === CR;
  return n === 2 && bytes[start] === CR && bytes[start + 1] === LF;
}

/** Whole records parsed together, or the unterminated rest of the file. */
type Region =
  | { kind: 'records'; start: number; bytes: Buffer; records: string[][]; ends: number[] }
  | { kind: 'unterminated'; end: number; head: Buffer };

/**
 * Cuts the byte stream at record ends (RecordScanner) and parses each run of whole records with
 * csv-parse. The record in progress is held until it ends; past RECORD_HOLD_MAX only its first
 * bytes are kept (for the excerpt) and it is re-read from the file once its end is known. That
 * keeps memory constant when a quote left open swallows the rest of a 1 GiB file, a case
 * csv-parse alone only reports at the end, after buffering all of it.
 */
class RecordReader {
  private readonly scanner: RecordScanner;
  private readonly source: Source;
  private readonly ready: Region[] = [];
  private held: Buffer[] = [];
  private heldSize = 0;
  private oversized = false;
  private ended = false;

  constructor(
    private readonly open: Opener,
    start: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.scanner = new RecordScanner(start, []);
    this.source = openSource(open, start, signal);
  }

  async next(): Promise<Region | undefined> {
    while (!this.ready.length && !this.ended) {
      const chunk = await this.source.read();
      if (chunk) await this.take(chunk);
      else await this.finish();
    }
    return this.ready.shift();
  }

  close(): void {
    this.source.close();
  }

  private async take(chunk: Buffer): Promise<void> {
    if (this.oversized) {
      const start = this.scanner.recordStart;
      const used = this.scanner.scan(chunk, { oneRecord: true });
      if (this.scanner.recordStart === start) return;
      this.ready.push(this.parse(start, await this.reread(start, this.scanner.recordStart)));
      this.dropHeld();
      chunk = chunk.subarray(used);
    }
    const base = this.scanner.offset;
    this.scanner.scan(chunk);
    const cut = this.scanner.recordStart - base;
    if (cut > 0) {
      const whole = chunk.subarray(0, cut);
      const start = this.scanner.recordStart - this.heldSize - cut;
      this.ready.push(this.parse(start, this.heldSize ? Buffer.concat([...this.held, whole]) : whole));
      this.dropHeld();
      chunk = chunk.subarray(cut);
    }
    if (!chunk.length) return;
    this.held.push(chunk);
    this.heldSize += chunk.length;
    if (this.heldSize > RECORD_HOLD_MAX) {
      this.held = [Buffer.concat(this.held, EXCERPT_BYTES)];
      this.oversized = true;
    }
  }

  private async finish(): Promise<void> {
    this.ended = true;
    const start = this.scanner.recordStart;
    const end = this.scanner.offset;
    if (this.scanner.finish()) {
      this.ready.push({
        kind: 'unterminated',
        end,
        head: Buffer.concat(this.held, Math.min(this.heldSize, EXCERPT_BYTES)),
      });
    } else if (end > start) {
      this.ready.push(this.parse(start, this.oversized ? await this.reread(start, end) : Buffer.concat(this.held)));
    }
  }

  private dropHeld(): void {
    this.held = [];
    this.heldSize = 0;
    this.oversized = false;
  }

  /**
   * Parses the records the scanner found in `bytes`. Their ends come from the scanner: csv-parse's
   * `info` option costs a third of the parse time. The two must agree or resume points would drift:
   * csv-parse throws on a region that ends inside quotes, and the record counts are compared.
   */
  private parse(start: number, bytes: Buffer): Region {
    const records = parse(bytes, PARSE_OPTIONS);
    const ends = this.scanner.ends!;
    this.scanner.ends = [];
    if (records.length !== ends.length) {
      throw new Error(
        `csv: csv-parse found ${records.length} records where the scanner found ${ends.length} (bytes ${start} to ${start + bytes.length})`,
      );
    }
    return { kind: 'records', start, bytes, records, ends };
  }

  private async reread(start: number, end: number): Promise<Buffer> {
    const source = openSource(this.open, start, this.signal);
    try {
      const bytes = await source.readAtLeast(end - start);
      if (bytes.length < end - start)
        throw new Error(`csv: the file ended at byte ${start + bytes.length} while re-reading up to ${end}`);
      return bytes.subarray(0, end - start);
    } finally {
      source.close();
    }
  }
}

/**
 * Finds where records end with a quote-aware byte scan (Buffer.indexOf, no per-byte loop), as
 * csv-parse with PARSE_OPTIONS does: a quote opens a quoted field only at the start of a field,
 * `""` inside it is a quote, and any other quote closes it; outside quotes a LF ends the record.
 */
class RecordScanner {
  /** Records ended so far, blank ones included. */
  records = 0;
  /** Records ended so far that are not blank. */
  filled = 0;
  /** Absolute offset of the first byte of the record in progress. */
  recordStart: number;
  /** Absolute offset of the next byte to scan. */
  offset: number;
  private quoting = false;
  /** Quoting, and the last chunk ended on a quote: the next byte tells an escaped quote from a closing one. */
  private quoteAtEnd = false;
  private lastByte = -1;
  /** First byte of the record in progress (blank-line test when the record spans chunks). */
  private firstByte = -1;

  /** With `ends`, the end offset of every record is appended to it. */
  constructor(
    start: number,
    public ends?: number[],
  ) {
    this.recordStart = this.offset = start;
  }

  /**
   * Scans `buf`, the bytes at `offset`; with `oneRecord`, stops after the first record end. Returns the bytes scanned.
   */
  scan(buf: Buffer, { oneRecord = false }: { oneRecord?: boolean } = {}): number {
    const base = this.offset;
    const len = buf.length;
    let i = 0;
    if (this.quoteAtEnd && len) {
      this.quoteAtEnd = false;
      if (buf[0] === QUOTE) i = 1;
      else this.quoting = false;
    }
    // Cached positions of the next quote and LF (-2: not searched yet, -1: none left in buf).
    let quote = -2;
    let lf = -2;
    while (i < len) {
      if (this.quoting) {
        const q = buf.indexOf(QUOTE, i);
        if (q === -1) {
          i = len;
        } else if (q + 1 === len) {
          this.quoteAtEnd = true;
          i = len;
        } else if (buf[q + 1] === QUOTE) {
          i = q + 2;
        } else {
          this.quoting = false;
          i = q + 1;
        }
        continue;
      }
      if (quote !== -1 && quote < i) quote = buf.indexOf(QUOTE, i);
      if (lf !== -1 && lf < i) lf = buf.indexOf(LF, i);
      if (quote !== -1 && (lf === -1 || quote < lf)) {
        const prev = quote > 0 ? buf[quote - 1] : this.lastByte;
        this.quoting = base + quote === this.recordStart || prev === COMMA;
        i = quote + 1;
      } else if (lf === -1) {
        i = len;
      } else {
        this.endRecord(buf, base, lf + 1);
        i = lf + 1;
        if (oneRecord) break;
      }
    }
    this.offset = base + i;
    if (i > 0) this.lastByte = buf[i - 1]!;
    if (this.recordStart >= base && this.recordStart < this.offset) this.firstByte = buf[this.recordStart - base]!;
    return i;
  }

  /** Ends the file; true when it ends inside a quoted field (that record is counted, not blank). */
  finish(): boolean {
    if (this.quoteAtEnd) this.quoteAtEnd = this.quoting = false;
    if (this.offset > this.recordStart) {
      const blank = !this.quoting && this.offset - this.recordStart === 1 && this.firstByte === CR;
      this.records++;
      if (!blank) this.filled++;
      if (!this.quoting) this.ends?.push(this.offset);
      this.recordStart = this.offset;
    }
    return this.quoting;
  }

  private endRecord(buf: Buffer, base: number, end: number): void {
    const n = base + end - this.recordStart;
    const first = this.recordStart >= base ? buf[this.recordStart - base] : this.firstByte;
    this.records++;
    if (n > 2 || (n === 2 && first !== CR)) this.filled++;
    this.recordStart = base + end;
    this.ends?.push(this.recordStart);
  }
}

/** UTF-8 validation across chunks: isUtf8 on each, with a character split by a chunk end carried over. */
class Utf8Check {
  private carry: Buffer | undefined;

  /** Index in `buf` of the first invalid byte (0 when its sequence began in an earlier chunk), or -1. */
  check(buf: Buffer): number {
    const carried = this.carry?.length ?? 0;
    const data = this.carry ? Buffer.concat([this.carry, buf]) : buf;
    const cut = data.length - incompleteTail(data);
    this.carry = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined;
    if (isUtf8(data.subarray(0, cut))) return -1;
    return Math.max(0, firstInvalidByte(data.subarray(0, cut)) - carried);
  }

  /** At the end of the file, a carried character is cut short. */
  get truncated(): boolean {
    return this.carry !== undefined;
  }
}

/** Bytes at the end of `data` that start a character the next chunk must complete. */
function incompleteTail(data: Buffer): number {
  for (let k = 1; k <= Math.min(3, data.length); k++) {
    const b = data[data.length - k]!;
    if ((b & 0xc0) === 0x80) continue;
    const size = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return size > k ? k : 0;
  }
  return 0;
}

/** Only on the error path: feeds a fatal decoder byte by byte to find where the bad sequence starts. */
function firstInvalidByte(seg: Buffer): number {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let sequenceStart = 0;
  for (let i = 0; i < seg.length; i++) {
    try {
      if (decoder.decode(seg.subarray(i, i + 1), { stream: true })) sequenceStart = i + 1;
    } catch {
      return sequenceStart;
    }
  }
  return sequenceStart;
}

interface Source {
  /** The next chunk, or undefined at the end of the file. */
  read(): Promise<Buffer | undefined>;
  /** At least `n` bytes (fewer only at the end of the file), as one buffer. */
  readAtLeast(n: number): Promise<Buffer>;
  close(): void;
}

/** The opener's stream as pulled chunks: nothing is read before it is asked for (backpressure). */
function openSource(open: Opener, start: number, signal: AbortSignal | undefined): Source {
  throwIfAborted(signal);
  const opened = open(start);
  const stream = opened instanceof Readable ? opened : new Readable().wrap(opened);
  const onAbort = () => stream.destroy(abortError(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });
  const chunks = stream[Symbol.asyncIterator]();
  // A stream's destroy may wait for its source (Readable.from waits for its generator), so a
  // pending read gives up on the abort itself rather than on the stream's error.
  const read = () =>
    new Promise<Buffer | undefined>((resolve, reject) => {
      const giveUp = () => reject(abortError(signal!));
      if (signal?.aborted) return giveUp();
      signal?.addEventListener('abort', giveUp, { once: true });
      chunks
        .next()
        .then(
          ({ value, done }) =>
            resolve(done ? undefined : Buffer.isBuffer(value) ? value : Buffer.from(value as Uint8Array)),
          reject,
        )
        .finally(() => signal?.removeEventListener('abort', giveUp));
    });
  return {
    read,
    async readAtLeast(n) {
      const parts: Buffer[] = [];
      let size = 0;
      while (size < n) {
        const chunk = await read();
        if (!chunk) break;
        parts.push(chunk);
        size += chunk.length;
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    },
    close() {
      signal?.removeEventListener('abort', onAbort);
      stream.destroy();
    },
  };
}

function abortError(signal: AbortSignal): Error {
  const err = new Error('The CSV read was aborted.', { cause: signal.reason });
  err.name = 'AbortError';
  return err;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}
