/**
 * The CSV ingest core (src/queues/csv.ts, format decided in openapi/queues.yaml): scanCsv's head
 * errors and counts, readRows' rows, row errors and rowNumbers, and above all that reading chunk
 * by chunk from each chunk's resume point gives exactly one full read. Files are real files in a
 * temp dir; small read sizes (highWaterMark) put every quote and line end on a chunk boundary.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  CSV_MAX_ROWS,
  CsvHeadError,
  parseRecords,
  readRows,
  scanCsv,
  type CsvChunk,
  type CsvHead,
  type Opener,
  type ResumePoint,
} from '../../../src/queues/csv.js';

let dir: string;
let fileNo = 0;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-csv-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(content: string | Buffer): string {
  const file = path.join(dir, `f${++fileNo}.csv`);
  fs.writeFileSync(file, content);
  return file;
}

function opener(file: string, highWaterMark?: number): Opener {
  return (start) => fs.createReadStream(file, { start, highWaterMark });
}

async function headError(open: Opener, maxRows?: number): Promise<CsvHeadError> {
  try {
    await scanCsv(open, { maxRows });
  } catch (err) {
    expect(err).to.be.instanceOf(CsvHeadError);
    return err as CsvHeadError;
  }
  throw new Error('scanCsv accepted the file');
}

async function readAll(open: Opener, columns: string[], from: ResumePoint, chunkRows = 1000): Promise<CsvChunk[]> {
  const chunks: CsvChunk[] = [];
  for await (const chunk of readRows(open, { columns, from, chunkRows })) chunks.push(chunk);
  return chunks;
}

const start = (head: CsvHead): ResumePoint => ({ offset: head.dataStart, rowNumber: 2 });
const flatten = (chunks: CsvChunk[]) => ({
  rows: chunks.flatMap((c) => c.rows),
  errors: chunks.flatMap((c) => c.errors),
});

async function abortedWith(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an AbortError');
}

/** Every case the format has, with each record's rowNumber in the comment. */
const TRICKY = [
  '\ufeffname , email,note\r\n', // 1: BOM, CRLF, names trimmed
  'Ada,ada@example.com,"says ""hi"",\ntwice"\r\n', // 2: an escaped quote, then a line break
  '\r\n', // 3: blank
  'Bob,bob@example.com,"line one\nline two\r\nline three"\r\n', // 4: quoted line breaks
  '\n', // 5: blank
  'Cy,cy@example.com\r\n', // 6: too few columns
  'Di,"di@example.com",ok,extra\n', // 7: too many columns
  'Ed,ed@example.com,\n', // 8: empty last field
  'Fa,a"b,"x"y\n', // 9: stray quotes are text (relax_quotes)
  'Gus,gus@example.com,"unclosed, swallows\nthe rest\n\nof the file',
].join('');

const TRICKY_ROWS = [
  { rowNumber: 2, start: 22, end: 64, values: { name: 'Ada', email: 'ada@example.com', note: 'says "hi",\ntwice' } },
  {
    rowNumber: 4,
    start: 66,
    end: 119,
    values: { name: 'Bob', email: 'bob@example.com', note: 'line one\nline two\r\nline three' },
  },
  { rowNumber: 8, start: 168, end: 187, values: { name: 'Ed', email: 'ed@example.com', note: '' } },
  { rowNumber: 9, start: 187, end: 199, values: { name: 'Fa', email: 'a"b', note: '"x"y' } },
];
const TRICKY_ERRORS = [
  {
    rowNumber: 6,
    reason: 'column_count',
    message: 'Row has 2 columns; the header has 3.',
    rawExcerpt: 'Cy,cy@example.com',
  },
  {
    rowNumber: 7,
    reason: 'column_count',
    message: 'Row has 4 columns; the header has 3.',
    rawExcerpt: 'Di,"di@example.com",ok,extra',
  },
  {
    rowNumber: 10,
    reason: 'unterminated_quote',
    message: 'A quoted field is not closed before the end of the file.',
    rawExcerpt: 'Gus,gus@example.com,"unclosed, swallows\nthe rest\n\nof the file',
  },
];

describe('scanCsv', () => {
  it('reads the header, skips the BOM and counts non-blank data records (malformed ones included)', async () => {
    const file = write(TRICKY);
    const head = await scanCsv(opener(file));
    expect(head).to.deep.equal({
      columns: ['name', 'email', 'note'],
      dataStart: Buffer.byteLength('\ufeffname , email,note\r\n'),
      totalRows: 7,
    });
  });

  it('gives the same result whatever the read size (quotes, CRLF and UTF-8 split across chunks)', async () => {
    const file = write(TRICKY.replace('Ed,', 'Éd😀€,'));
    const expected = await scanCsv(opener(file));
    expect(expected.totalRows).to.equal(7);
    for (const size of [1, 2, 3, 4, 5, 7, 13]) {
      expect(await scanCsv(opener(file, size)), `highWaterMark ${size}`).to.deep.equal(expected);
    }
  });

  it('accepts LF and CRLF line ends and a last line without a line end', async () => {
    expect(await scanCsv(opener(write('a,b\n1,2\n3,4')))).to.deep.equal({
      columns: ['a', 'b'],
      dataStart: 4,
      totalRows: 2,
    });
    expect(await scanCsv(opener(write('a,b\r\n1,2\r\n3,4\r\n')))).to.deep.equal({
      columns: ['a', 'b'],
      dataStart: 5,
      totalRows: 2,
    });
  });

  it('refuses an empty file, a BOM-only file and a file of blank lines', async () => {
    for (const content of ['', '\ufeff', '\n', '\r\n\n\r\n', '\ufeff\n\n', '\r']) {
      const err = await headError(opener(write(content)));
      expect([err.code, err.message], JSON.stringify(content)).to.deep.equal(['empty_file', 'The file is empty.']);
    }
  });

  it('refuses a header without data rows', async () => {
    for (const content of ['a,b', 'a,b\n', 'a,b\r\n\r\n\n', '\ufeffa,b\n\n']) {
      const err = await headError(opener(write(content)));
      expect([err.code, err.message], JSON.stringify(content)).to.deep.equal([
        'invalid_csv_header',
        'The file has a header but no data rows.',
      ]);
    }
  });

  it('refuses an empty column name, naming its position', async () => {
    const err = await headError(opener(write('a,,c\n1,2,3\n')));
    expect([err.code, err.message]).to.deep.equal([
      'invalid_csv_header',
      'Column 2 of the header has no name; every column needs a name.',
    ]);
    const blank = await headError(opener(write('a,b,  \n1,2,3\n')));
    expect(blank.message).to.equal('Column 3 of the header has no name; every column needs a name.');
  });

  it('refuses a duplicate column name (after trimming), naming it', async () => {
    const err = await headError(opener(write('id,email,name, email\n1,2,3,4\n')));
    expect([err.code, err.message]).to.deep.equal([
      'invalid_csv_header',
      'The header names "email" twice (columns 2 and 4); column names must be unique.',
    ]);
  });

  it("refuses a ';' or tab delimited file", async () => {
    const semi = await headError(opener(write('name;email\nAda;ada@example.com\n')));
    expect([semi.code, semi.message]).to.deep.equal([
      'invalid_csv_header',
      "The file seems to use ';' as its delimiter; only comma-separated files are accepted.",
    ]);
    const tab = await headError(opener(write('name\temail\nAda\tada@example.com\n')));
    expect([tab.code, tab.message]).to.deep.equal([
      'invalid_csv_header',
      'The file seems to use tab as its delimiter; only comma-separated files are accepted.',
    ]);
  });

  it('refuses a header whose quote never closes, and a blank first line', async () => {
    const quote = await headError(opener(write('a,"b\n1,2\n3,4\n')));
    expect([quote.code, quote.message]).to.deep.equal([
      'invalid_csv_header',
      'The header has a quoted field whose closing quote is missing.',
    ]);
    const blank = await headError(opener(write('\na,b\n1,2\n')));
    expect([blank.code, blank.message]).to.deep.equal([
      'invalid_csv_header',
      'Line 1 is blank; the first line must be the header naming the columns.',
    ]);
  });

  it('accepts an unclosed quote in a data row: it is one (malformed) row', async () => {
    expect(await scanCsv(opener(write('a,b\n1,2\n"3,4\n5,6\n')))).to.deep.equal({
      columns: ['a', 'b'],
      dataStart: 4,
      totalRows: 2,
    });
  });

  it('refuses invalid UTF-8, naming the rowNumber of the first bad byte', async () => {
    const cases: [Buffer, number][] = [
      [Buffer.concat([Buffer.from('na'), Buffer.from([0xff]), Buffer.from('me,b\n1,2\n')]), 1],
      [Buffer.concat([Buffer.from('a,b\n1,2\n\n"x\ny",2\n3,'), Buffer.from([0xe9]), Buffer.from('t\xe9\n')]), 5], // Latin-1 é
      [Buffer.concat([Buffer.from('a,b\n1,2\n3,'), Buffer.from([0xe2, 0x82]), Buffer.from('\n4,5\n')]), 3], // cut before its LF
      [Buffer.concat([Buffer.from('a,b\n1,2\n\r\n3,'), Buffer.from([0xf0, 0x9f, 0x98])]), 4], // cut by the end of the file
      [Buffer.concat([Buffer.from('\ufeffa,b\n1,'), Buffer.from([0xc0, 0xaf]), Buffer.from('\n')]), 2], // overlong
    ];
    for (const [content, rowNumber] of cases) {
      const file = write(content);
      for (const size of [1, 2, 3, 65536]) {
        const err = await headError(opener(file, size));
        expect([err.code, err.message], `${content.toString('hex')} read by ${size}`).to.deep.equal([
          'invalid_encoding',
          `The file is not valid UTF-8: row ${rowNumber} has an invalid byte sequence. Save the file with UTF-8 encoding and upload it again.`,
        ]);
      }
    }
  });

  it('accepts exactly maxRows data rows and refuses one more, blank lines not counted', async () => {
    const rows = (n: number) => 'a,b\n' + '1,2\n\n'.repeat(n);
    expect((await scanCsv(opener(write(rows(1000))), { maxRows: 1000 })).totalRows).to.equal(1000);
    const err = await headError(opener(write(rows(1001))), 1000);
    expect([err.code, err.message]).to.deep.equal([
      'too_many_rows',
      'CSV batches are limited to 1000 rows; this file has 1001.',
    ]);
  });

  it('applies the real limit of 500,000 rows', async () => {
    expect(CSV_MAX_ROWS).to.equal(500_000);
    const file = write('a,b\n' + 'x,y\n'.repeat(CSV_MAX_ROWS));
    const head = await scanCsv(opener(file));
    expect(head.totalRows).to.equal(CSV_MAX_ROWS);
    let count = 0;
    for await (const chunk of readRows(opener(file), { columns: head.columns, from: start(head), chunkRows: 10_000 }))
      count += chunk.rows.length;
    expect(count).to.equal(CSV_MAX_ROWS);
    fs.appendFileSync(file, 'x,y');
    const err = await headError(opener(file));
    expect([err.code, err.message]).to.deep.equal([
      'too_many_rows',
      'CSV batches are limited to 500000 rows; this file has 500001.',
    ]);
  });

  it('stops with an AbortError when the signal fires', async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await abortedWith(scanCsv(opener(write('a,b\n1,2\n')), { signal: ac.signal }))).name).to.equal(
      'AbortError',
    );

    const slow = new AbortController();
    const open: Opener = () =>
      Readable.from(
        (async function* () {
          yield Buffer.from('a,b\n1,2\n');
          setTimeout(() => slow.abort(), 10);
          await new Promise((r) => setTimeout(r, 5000).unref());
          yield Buffer.from('3,4\n');
        })(),
      );
    const began = Date.now();
    expect((await abortedWith(scanCsv(open, { signal: slow.signal }))).name).to.equal('AbortError');
    expect(Date.now() - began, 'ms until the scan stopped').to.be.lessThan(1000);
  });
});

describe('readRows', () => {
  it('reads rows, row errors and rowNumbers (quoted commas, quotes, line breaks; blank lines; CRLF; BOM)', async () => {
    const file = write(TRICKY);
    const head = await scanCsv(opener(file));
    const chunks = await readAll(opener(file), head.columns, start(head));
    expect(chunks).to.deep.equal([
      {
        rows: TRICKY_ROWS,
        errors: TRICKY_ERRORS,
        next: { offset: Buffer.byteLength(TRICKY), rowNumber: 11 },
        done: true,
      },
    ]);
    expect(TRICKY_ROWS.length + TRICKY_ERRORS.length).to.equal(head.totalRows);
    // A row's byte range is its whole record, line end included: parsed alone it gives the row again.
    const bytes = fs.readFileSync(file);
    for (const row of TRICKY_ROWS) {
      const [record, ...more] = parseRecords(bytes.subarray(row.start, row.end));
      expect(more, `row ${row.rowNumber}`).to.deep.equal([]);
      expect(record, `row ${row.rowNumber}`).to.deep.equal(
        head.columns.map((c) => (row.values as Record<string, string>)[c]),
      );
    }
  });

  it('gives the same chunks whatever the read size', async () => {
    const file = write(TRICKY);
    const head = await scanCsv(opener(file));
    const expected = await readAll(opener(file), head.columns, start(head), 2);
    for (const size of [1, 2, 3, 5, 8]) {
      expect(await readAll(opener(file, size), head.columns, start(head), 2), `highWaterMark ${size}`).to.deep.equal(
        expected,
      );
    }
  });

  it('yields at most chunkRows rows and errors per chunk, and done only on the last', async () => {
    const file = write(TRICKY);
    const head = await scanCsv(opener(file));
    const chunks = await readAll(opener(file), head.columns, start(head), 3);
    expect(chunks.map((c) => [c.rows.length + c.errors.length, c.done])).to.deep.equal([
      [3, false],
      [3, false],
      [1, true],
    ]);
    expect(flatten(chunks)).to.deep.equal({ rows: TRICKY_ROWS, errors: TRICKY_ERRORS });

    const exact = write('a\n1\n2\n3\n4\n\n');
    const fours = await readAll(opener(exact), ['a'], { offset: 2, rowNumber: 2 }, 2);
    expect(fours.map((c) => [c.rows.map((r) => r.values.a), c.next, c.done])).to.deep.equal([
      [['1', '2'], { offset: 6, rowNumber: 4 }, false],
      [['3', '4'], { offset: 11, rowNumber: 7 }, true],
    ]);
  });

  it("resumes from any chunk's next with exactly the records that follow", async () => {
    const file = write(TRICKY);
    const head = await scanCsv(opener(file));
    const full = flatten(await readAll(opener(file), head.columns, start(head)));
    const chunks = await readAll(opener(file), head.columns, start(head), 1);
    expect(chunks).to.have.length(7);
    const points = [start(head), ...chunks.map((c) => c.next)];
    // Resume points just before the quoted multi-line field and before the unterminated quote.
    expect(points).to.deep.include({
      offset: Buffer.byteLength(TRICKY.slice(0, TRICKY.indexOf('Bob,'))),
      rowNumber: 4,
    });
    expect(points).to.deep.include({
      offset: Buffer.byteLength(TRICKY.slice(0, TRICKY.indexOf('Gus,'))),
      rowNumber: 10,
    });
    // Chunk by chunk, each from the previous chunk's next with a fresh opener.
    const pieced: CsvChunk[] = [];
    for (let from = start(head); ;) {
      const rows = readRows(opener(file, 4), { columns: head.columns, from, chunkRows: 1 });
      const chunk: CsvChunk = (await rows.next()).value;
      await rows.return(undefined);
      pieced.push(chunk);
      if (chunk.done) break;
      from = chunk.next;
    }
    expect(pieced).to.deep.equal(chunks);
    expect(flatten(pieced)).to.deep.equal(full);
    // From each resume point to the end.
    for (const [i, point] of points.entries()) {
      const rest = flatten(await readAll(opener(file), head.columns, point));
      const items = [...full.rows, ...full.errors].filter((r) => r.rowNumber >= point.rowNumber);
      expect(rest.rows.length + rest.errors.length, `from ${JSON.stringify(point)}`).to.equal(items.length);
      expect(rest, `from resume point ${i}`).to.deep.equal({
        rows: full.rows.filter((r) => r.rowNumber >= point.rowNumber),
        errors: full.errors.filter((r) => r.rowNumber >= point.rowNumber),
      });
    }
  });

  it('counts a last line holding only a CR as a blank record', async () => {
    const file = write('a,b\n1,2\n\r');
    expect(await readAll(opener(file), ['a', 'b'], { offset: 4, rowNumber: 2 })).to.deep.equal([
      {
        rows: [{ rowNumber: 2, start: 4, end: 8, values: { a: '1', b: '2' } }],
        errors: [],
        next: { offset: 9, rowNumber: 4 },
        done: true,
      },
    ]);
    expect((await scanCsv(opener(file))).totalRows).to.equal(1);
  });

  it('resumes at the end of the file with one empty, done chunk', async () => {
    const file = write('a,b\n1,2\n\n');
    expect(await readAll(opener(file), ['a', 'b'], { offset: 9, rowNumber: 4 })).to.deep.equal([
      { rows: [], errors: [], next: { offset: 9, rowNumber: 4 }, done: true },
    ]);
  });

  it('cuts rawExcerpt to 200 characters, without the line end', async () => {
    const long = 'x'.repeat(150) + ',' + 'y'.repeat(150) + ',z';
    const emoji = '😀'.repeat(300) + ',2,3';
    const file = write(`a,b\n${long}\r\n${emoji}\n1,2,3\r\n`);
    const { errors } = flatten(await readAll(opener(file), ['a', 'b'], { offset: 4, rowNumber: 2 }));
    expect(errors.map((e) => e.rawExcerpt)).to.deep.equal([long.slice(0, 200), '😀'.repeat(200), '1,2,3']);
    expect(errors.map((e) => e.message)).to.deep.equal([
      'Row has 3 columns; the header has 2.',
      'Row has 3 columns; the header has 2.',
      'Row has 3 columns; the header has 2.',
    ]);
    expect(Array.from(errors[1]!.rawExcerpt)).to.have.length(200);
  });

  it('reads a record longer than the 1 MiB it holds, and an unclosed quote that swallows 3 MiB', async () => {
    const big = 'é'.repeat(600_000) + '\n' + '"'.repeat(2);
    const file = write(`a,b\n1,"${big.replace(/"/g, '""')}"\n2,3\n4,"${'z'.repeat(3_000_000)}\n5,6\n`);
    const opens: number[] = [];
    const open: Opener = (s) => (opens.push(s), fs.createReadStream(file, { start: s }));
    const chunks = await readAll(open, ['a', 'b'], { offset: 4, rowNumber: 2 });
    expect(opens, 'the long record is re-read from its start; the unclosed one is not').to.deep.equal([4, 4]);
    const { rows, errors } = flatten(chunks);
    expect(rows.map((r) => [r.rowNumber, r.values.a, r.values.b!.length])).to.deep.equal([
      [2, '1', big.length],
      [3, '2', 1],
    ]);
    expect(rows[0]!.values.b).to.equal(big);
    expect(errors).to.deep.equal([
      {
        rowNumber: 4,
        reason: 'unterminated_quote',
        message: 'A quoted field is not closed before the end of the file.',
        rawExcerpt: '4,"' + 'z'.repeat(197),
      },
    ]);
    expect(chunks.at(-1)!.next).to.deep.equal({ offset: fs.statSync(file).size, rowNumber: 5 });
    expect((await scanCsv(opener(file))).totalRows).to.equal(3);
  });

  it('keeps a column named __proto__ as an own property', async () => {
    const file = write('__proto__,b\n1,2\n');
    const [chunk] = await readAll(opener(file), ['__proto__', 'b'], { offset: 12, rowNumber: 2 });
    expect(Object.getOwnPropertyDescriptor(chunk!.rows[0]!.values, '__proto__')?.value).to.equal('1');
    expect(Object.keys(chunk!.rows[0]!.values)).to.deep.equal(['__proto__', 'b']);
  });

  it('reads ahead only a little, whatever chunkRows is', async () => {
    const file = write('a,b\n' + '1,2\n'.repeat(100_000));
    let stream: fs.ReadStream | undefined;
    const open: Opener = (s) => (stream = fs.createReadStream(file, { start: s, highWaterMark: 4096 }));
    const rows = readRows(open, { columns: ['a', 'b'], from: { offset: 4, rowNumber: 2 }, chunkRows: 10 });
    const first = await rows.next();
    expect(first.value.rows).to.have.length(10);
    expect(stream!.bytesRead, 'bytes read for the first 10 rows').to.be.at.most(3 * 4096);
    await rows.return(undefined);
    expect(stream!.destroyed).to.equal(true);
  });

  it('throws an AbortError when the signal fired before, between chunks or during a read', async () => {
    const file = write('a,b\n' + '1,2\n'.repeat(100));
    const ac = new AbortController();
    ac.abort();
    const before = readRows(opener(file, 16), {
      columns: ['a', 'b'],
      from: { offset: 4, rowNumber: 2 },
      chunkRows: 10,
      signal: ac.signal,
    });
    expect((await abortedWith(before.next())).name).to.equal('AbortError');

    const later = new AbortController();
    const gen = readRows(opener(file), {
      columns: ['a', 'b'],
      from: { offset: 4, rowNumber: 2 },
      chunkRows: 10,
      signal: later.signal,
    });
    expect((await gen.next()).value.rows).to.have.length(10);
    later.abort();
    expect((await abortedWith(gen.next())).name).to.equal('AbortError');

    const slow = new AbortController();
    const open: Opener = () =>
      Readable.from(
        (async function* () {
          yield Buffer.from('1,2\n');
          setTimeout(() => slow.abort(), 10);
          await new Promise((r) => setTimeout(r, 5000).unref());
          yield Buffer.from('3,4\n');
        })(),
      );
    const began = Date.now();
    const stalled = readRows(open, {
      columns: ['a', 'b'],
      from: { offset: 0, rowNumber: 2 },
      chunkRows: 10,
      signal: slow.signal,
    });
    expect((await abortedWith(stalled.next())).name).to.equal('AbortError');
    expect(Date.now() - began, 'ms until the read stopped').to.be.lessThan(1000);
  });
});
