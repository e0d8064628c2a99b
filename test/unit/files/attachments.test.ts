import { expect } from 'chai';
import {
  ATTACHMENT_LIMITS,
  BLOCKED_EXTENSIONS,
  inspectContent,
  isBlockedFilename,
  isBlockedMediaType,
} from '../../../src/files/attachments.js';
import { sanitizeFilename } from '../../../src/files/filenames.js';

/** First bytes of real formats, padded so detectors have enough to look at. */
const samples = {
  elf: Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120)]),
  pe: Buffer.concat([
    Buffer.from('MZ'),
    Buffer.alloc(58),
    Buffer.from([0x80, 0, 0, 0]),
    Buffer.alloc(64),
    Buffer.from('PE\0\0'),
    Buffer.alloc(64),
  ]),
  machO: Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]), Buffer.alloc(120)]),
  shebang: Buffer.from('#!/bin/sh\necho owned\n'),
  bomShebang: Buffer.from('\ufeff#!/usr/bin/env python3\nprint(1)\n'),
  png: Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    Buffer.from('IHDR'),
    Buffer.alloc(17),
  ]),
  pdf: Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n'),
  text: Buffer.from('Quarterly numbers, nothing to run here.\n'),
};

/** A minimal zip whose first entry is META-INF/MANIFEST.MF: a Java archive. */
function jarSample(): Buffer {
  const name = Buffer.from('META-INF/MANIFEST.MF');
  const data = Buffer.from('Manifest-Version: 1.0\r\nMain-Class: Evil\r\n');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(10, 4);
  header.writeUInt32LE(data.length, 18);
  header.writeUInt32LE(data.length, 22);
  header.writeUInt16LE(name.length, 26);
  return Buffer.concat([header, name, data, Buffer.alloc(64)]);
}

describe('attachment type blocking (spec "Limits": executables and scripts blocked)', () => {
  it("limits are the spec's, with MB = MiB (openapi decision)", () => {
    expect(ATTACHMENT_LIMITS).to.deep.equal({
      maxFiles: 20,
      maxFileBytes: 26_214_400,
      maxTotalBytes: 104_857_600,
      maxFields: 1000,
      maxFieldBytes: 1_048_576,
      maxFieldNameBytes: 1024,
    });
  });

  it('blocks the documented extensions, case-insensitively, on the sanitized name', () => {
    const documented =
      '.exe .dll .com .scr .msi .msp .bat .cmd .ps1 .psm1 .vbs .vbe .js .jse .mjs .cjs .wsf .wsh .hta .jar .sh .bash .zsh .ksh .csh .py .pl .rb .php .app .apk .deb .rpm .dmg .pkg .run .bin'
        .split(' ')
        .map((e) => e.slice(1));
    expect([...BLOCKED_EXTENSIONS].sort()).to.deep.equal([...documented].sort());
    for (const ext of documented) {
      expect(isBlockedFilename(`setup.${ext}`), ext).to.equal(true);
      expect(isBlockedFilename(`SETUP.${ext.toUpperCase()}`), ext).to.equal(true);
    }
    expect(isBlockedFilename(sanitizeFilename('invoice.pdf.exe'))).to.equal(true);
    expect(isBlockedFilename(sanitizeFilename('run.exe.'))).to.equal(true);
    expect(isBlockedFilename(sanitizeFilename('../../bin/deploy.sh'))).to.equal(true);
    for (const ok of [
      'invoice.pdf',
      'photo.JPG',
      'data.json',
      'notes.txt',
      'archive.zip',
      'exe',
      'sh',
      'bash_history.txt',
      'report.exe.pdf',
      'file',
    ]) {
      expect(isBlockedFilename(ok), ok).to.equal(false);
    }
  });

  it('blocks declared executable and script media types, parameters and case ignored', () => {
    for (const t of [
      'application/x-msdownload',
      'application/x-sh',
      'application/javascript',
      'text/javascript; charset=utf-8',
      'APPLICATION/X-MSDOWNLOAD',
      'application/x-executable',
      'text/x-python',
      'application/java-archive',
      'application/x-msi',
      'application/vnd.microsoft.portable-executable',
      'application/x-php',
      'text/x-shellscript',
    ]) {
      expect(isBlockedMediaType(t), t).to.equal(true);
    }
    for (const t of [
      undefined,
      'application/pdf',
      'text/plain',
      'application/octet-stream',
      'image/png',
      'application/json',
      'text/csv',
    ]) {
      expect(isBlockedMediaType(t), String(t)).to.equal(false);
    }
  });

  it('blocks by content: PE (MZ), ELF, Mach-O, jar, shebang (with or without BOM)', async () => {
    for (const [name, head] of Object.entries({
      elf: samples.elf,
      pe: samples.pe,
      machO: samples.machO,
      shebang: samples.shebang,
      bomShebang: samples.bomShebang,
      jar: jarSample(),
    })) {
      expect((await inspectContent(head)).blocked, name).to.equal(true);
    }
    expect((await inspectContent(Buffer.from('#!'))).blocked).to.equal(true);
  });

  it('lets documents through and reports their detected type', async () => {
    expect(await inspectContent(samples.png)).to.deep.equal({ blocked: false, mime: 'image/png' });
    expect(await inspectContent(samples.pdf)).to.deep.equal({ blocked: false, mime: 'application/pdf' });
    expect(await inspectContent(samples.text)).to.deep.equal({ blocked: false, mime: undefined });
    expect(await inspectContent(Buffer.alloc(0))).to.deep.equal({ blocked: false, mime: undefined });
    expect((await inspectContent(Buffer.from('# Heading\n#! not first'))).blocked).to.equal(false);
  });
});
