import { expect } from 'chai';
import { extensionOf, MAX_FILENAME_BYTES, sanitizeFilename } from '../../../src/files/filenames.js';

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

describe('sanitizeFilename (spec "Attachment": path parts removed, special characters replaced)', () => {
  it('keeps ordinary names as they are', () => {
    for (const name of ['invoice-q1.pdf', 'Report 2025_final.docx', 'a.b.c.tar.gz', 'README']) {
      expect(sanitizeFilename(name)).to.equal(name);
    }
  });

  it('removes path parts, whichever separator (traversal)', () => {
    expect(sanitizeFilename('../../etc/passwd')).to.equal('passwd');
    expect(sanitizeFilename('..\\x')).to.equal('x');
    expect(sanitizeFilename('C:\\Users\\ada\\Desktop\\report.pdf')).to.equal('report.pdf');
    expect(sanitizeFilename('/abs/path/to/file.txt')).to.equal('file.txt');
    expect(sanitizeFilename('a/b\\c/d.txt')).to.equal('d.txt');
    expect(sanitizeFilename('..')).to.equal('file');
    expect(sanitizeFilename('../..')).to.equal('file');
    expect(sanitizeFilename('dir/')).to.equal('file');
    expect(sanitizeFilename('....//....//x.txt')).to.equal('x.txt');
  });

  it('removes control characters', () => {
    expect(sanitizeFilename('re\u0000port\u0007.pdf')).to.equal('report.pdf');
    expect(sanitizeFilename('line\r\nbreak.txt')).to.equal('linebreak.txt');
    expect(sanitizeFilename('tab\there.txt')).to.equal('tabhere.txt');
    expect(sanitizeFilename('del\u007f\u0085.txt')).to.equal('del.txt');
  });

  it('replaces special characters with _ and collapses runs', () => {
    expect(sanitizeFilename('a<b>c:d"e|f?g*h.txt')).to.equal('a_b_c_d_e_f_g_h.txt');
    expect(sanitizeFilename('semi;colon&amp$.csv')).to.equal('semi_colon_amp_.csv');
    expect(sanitizeFilename('many***stars.txt')).to.equal('many_stars.txt');
    expect(sanitizeFilename('lots   of    spaces.txt')).to.equal('lots of spaces.txt');
    expect(sanitizeFilename('quote\'s "and" `ticks`.md')).to.equal('quote_s _and_ _ticks_.md');
    // Right-to-left override (the "gnp.exe" trick) is a format character, not a letter.
    expect(sanitizeFilename('photo\u202Egnp.exe')).to.equal('photo_gnp.exe');
  });

  it('keeps letters and digits of any script, replaces emoji', () => {
    expect(sanitizeFilename('résumé.pdf')).to.equal('résumé.pdf');
    expect(sanitizeFilename('re\u0301sume\u0301.pdf')).to.equal('résumé.pdf'); // NFC
    expect(sanitizeFilename('日本語のファイル.txt')).to.equal('日本語のファイル.txt');
    expect(sanitizeFilename('Привет мир.doc')).to.equal('Привет мир.doc');
    expect(sanitizeFilename('مرحبا ٣.txt')).to.equal('مرحبا ٣.txt');
    expect(sanitizeFilename('हिन्दी.txt')).to.equal('हिन्दी.txt'); // combining marks kept
    expect(sanitizeFilename('party 🎉🎉.png')).to.equal('party _.png');
    expect(sanitizeFilename('👨‍👩‍👧.jpg')).to.equal('_.jpg');
  });

  it('trims dots and spaces at both ends', () => {
    expect(sanitizeFilename('.bashrc')).to.equal('bashrc');
    expect(sanitizeFilename('  report.pdf  ')).to.equal('report.pdf');
    expect(sanitizeFilename('run.exe.')).to.equal('run.exe');
    expect(sanitizeFilename('...')).to.equal('file');
    expect(sanitizeFilename(' . ')).to.equal('file');
  });

  it('turns empty names into "file"', () => {
    expect(sanitizeFilename('')).to.equal('file');
    expect(sanitizeFilename(undefined)).to.equal('file');
    expect(sanitizeFilename(null)).to.equal('file');
    expect(sanitizeFilename('.')).to.equal('file');
    expect(sanitizeFilename('\u0000\u0001')).to.equal('file');
  });

  it('prefixes Windows device names', () => {
    expect(sanitizeFilename('CON')).to.equal('_CON');
    expect(sanitizeFilename('nul.txt')).to.equal('_nul.txt');
    expect(sanitizeFilename('com1.log')).to.equal('_com1.log');
    expect(sanitizeFilename('console.log')).to.equal('console.log');
  });

  it('caps very long names at 255 UTF-8 bytes, keeping the extension', () => {
    const ascii = sanitizeFilename(`${'a'.repeat(400)}.pdf`);
    expect(bytes(ascii)).to.equal(MAX_FILENAME_BYTES);
    expect(ascii.endsWith('.pdf')).to.equal(true);

    const cjk = sanitizeFilename(`${'日'.repeat(200)}.txt`); // 3 bytes each
    expect(bytes(cjk)).to.be.at.most(MAX_FILENAME_BYTES);
    expect(cjk).to.match(/^日+\.txt$/);
    expect(bytes(cjk)).to.equal(3 * 83 + 4); // 251 bytes left for the base: 83 whole characters

    // Never splits a character or a grapheme (e + combining accent stays together).
    const accents = sanitizeFilename(`${'e\u0301'.repeat(200)}.md`);
    expect(bytes(accents)).to.be.at.most(MAX_FILENAME_BYTES);
    expect(accents.normalize('NFC')).to.equal(accents);

    // An absurdly long "extension" is not kept whole.
    const longExt = sanitizeFilename(`x.${'y'.repeat(300)}`);
    expect(bytes(longExt)).to.equal(MAX_FILENAME_BYTES);

    // A blocked extension survives shortening (so the extension check still sees it).
    expect(sanitizeFilename(`${'b'.repeat(300)}.exe`).endsWith('.exe')).to.equal(true);
  });

  it('extensionOf', () => {
    expect(extensionOf('a.tar.gz')).to.equal('gz');
    expect(extensionOf('README')).to.equal('');
    expect(extensionOf('.hidden')).to.equal('');
    expect(extensionOf('trailing.')).to.equal('');
  });
});
