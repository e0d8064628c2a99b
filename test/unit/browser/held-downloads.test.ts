/**
 * The download files a browser box's watchdog holds open (src/browser/watchdog.ts
 * `HeldDownloads`), against a real process that keeps files open: a file the process has open
 * in the downloads folder is held through the process's descriptor, and its space stays with
 * the service after the file is deleted until `releaseDeleted`; files outside the folder, files
 * reached through a link out of it and files on another device are never held; a new name asks
 * for a scan at once, or once the gap since the last has passed.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { HeldDownloads } from '../../../src/browser/watchdog.js';

/** A process that opens (and writes 1 MiB to) or closes the files it is told, and says "ok" after each. */
const KEEPER = `
const fs = require('node:fs');
const open = new Map();
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const [op, file] = line.split(' ');
  if (op === 'open') {
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, Buffer.alloc(1 << 20, 1));
    open.set(file, fd);
  } else {
    fs.closeSync(open.get(file));
    open.delete(file);
  }
  process.stdout.write('ok\\n');
});`;

/** The files of this process's descriptors whose path starts with `prefix`. */
function ownOpen(prefix: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(prefix)) out.push(target);
    } catch {
      // the descriptor readdir itself used
    }
  }
  return out.sort();
}

describe('browser watchdog: download files held open through the box process’s descriptors', function () {
  let root = '';
  let folder = '';
  let keeper: ChildProcessWithoutNullStreams;
  let replies: AsyncIterator<string>;
  let held: HeldDownloads | undefined;

  const tell = async (op: 'open' | 'close', file: string) => {
    keeper.stdin.write(`${op} ${file}\n`);
    expect((await replies.next()).value).to.equal('ok');
  };
  const make = (disk = () => statSync(folder).dev as number | undefined) =>
    (held = new HeldDownloads({ folder, pids: () => [keeper.pid!], disk }));

  before(function () {
    if (process.platform !== 'linux') this.skip(); // /proc
  });
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'sy-held-'));
    folder = path.join(root, 'downloads');
    mkdirSync(folder);
    keeper = spawn(process.execPath, ['-e', KEEPER]);
    replies = createInterface({ input: keeper.stdout })[Symbol.asyncIterator]();
  });
  afterEach(() => {
    held?.close();
    held = undefined;
    keeper.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('holds a file the process has open in the folder; once deleted, its space stays held until releaseDeleted', async () => {
    const file = path.join(folder, 'a.crdownload');
    await tell('open', file);
    const h = make();
    h.scan();
    expect(h.size).to.equal(1);
    expect(ownOpen(folder)).to.deep.equal([file]);
    h.releaseDeleted(); // still there: kept
    expect(h.size).to.equal(1);
    h.scan(); // held once, however often the process is scanned
    expect(h.size).to.equal(1);

    await tell('close', file);
    unlinkSync(file);
    // The service's descriptor is now the file's last hold: its blocks are not freed yet.
    expect(ownOpen(folder)).to.deep.equal([`${file} (deleted)`]);
    h.releaseDeleted();
    expect(h.size).to.equal(0);
    expect(ownOpen(folder)).to.deep.equal([]);
  });

  it('never holds a file outside the folder, one reached through a link out of it, a deleted one, or one on another device', async () => {
    const outside = path.join(root, 'outside.bin');
    const sibling = `${folder}-sibling.bin`; // the folder's path is a prefix of its name, not of a folder
    const linkedFolder = path.join(root, 'elsewhere');
    mkdirSync(linkedFolder);
    symlinkSync(linkedFolder, path.join(folder, 'out'));
    await tell('open', outside);
    await tell('open', sibling);
    await tell('open', path.join(folder, 'out', 'through-link.bin'));
    const gone = path.join(folder, 'gone.bin');
    await tell('open', gone);
    unlinkSync(gone);
    const h = make();
    h.scan();
    expect(h.size).to.equal(0);

    await tell('open', path.join(folder, 'b.bin'));
    const otherDevice = make(() => statSync(folder).dev + 1);
    otherDevice.scan();
    expect(otherDevice.size).to.equal(0);
    otherDevice.close();
    const unknownDevice = make(() => undefined);
    unknownDevice.scan();
    expect(unknownDevice.size).to.equal(0);
  });

  it('a new name asks for a scan at once, or when the gap since the last has passed; a known name does not; close lets go of all', async () => {
    const h = make();
    await tell('open', path.join(folder, 'one'));
    h.seen('one');
    expect(h.size).to.equal(1);
    await tell('open', path.join(folder, 'two'));
    h.seen('one');
    expect(h.size).to.equal(1);
    h.seen(null);
    expect(h.size).to.equal(1);
    h.seen('two'); // within the gap: scanned a little later
    await new Promise((r) => setTimeout(r, 250));
    expect(h.size).to.equal(2);
    h.close();
    expect(h.size).to.equal(0);
    expect(ownOpen(folder)).to.deep.equal([]);
    await tell('open', path.join(folder, 'three'));
    h.seen('three');
    h.scan();
    expect(h.size).to.equal(0);
  });
});
