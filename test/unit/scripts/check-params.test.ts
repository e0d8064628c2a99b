import { expect } from 'chai';
import { checkSource } from '../../../scripts/check-params.js';

describe('parameter-list check (scripts/check-params.ts)', () => {
  it('flags a function with five positional parameters', () => {
    const findings = checkSource(
      'fixture.ts',
      'export function five(a: number, b: number, c: number, d: number, e: number) {}',
    );
    expect(findings).to.deep.equal([{ file: 'fixture.ts', line: 1, name: 'five', reason: '5 positional parameters' }]);
  });

  it('flags boolean parameters: typed, optional and defaulted, in methods, arrows and constructors', () => {
    const source = [
      'class C {',
      '  constructor(flag: boolean) {}',
      '  m(x: string, quiet?: boolean) {}',
      '}',
      'const arrow = (y: number, strict = false) => y;',
      'type Observer = { seen(ok: boolean | undefined): void };',
    ].join('\n');
    expect(checkSource('fixture.ts', source).map((f) => `${f.line} ${f.name}: ${f.reason}`)).to.deep.equal([
      '2 C.constructor: boolean parameter flag',
      '3 m: boolean parameter quiet',
      '5 arrow: boolean parameter strict',
      '6 seen: boolean parameter ok',
    ]);
  });

  it('accepts four positional parameters and an options object holding a flag', () => {
    const source = [
      'function four(a: number, b: number, c: number, d: number) {}',
      'function opts(a: string, { strict = false }: { strict?: boolean } = {}) {}',
    ].join('\n');
    expect(checkSource('fixture.ts', source)).to.deep.equal([]);
  });

  it('leaves out the signatures listed as fixed by a library', () => {
    const source = 'type Wasm = (a: number, b: number, c: number, d: number, e: number) => void;';
    expect(checkSource('fixture.ts', source)).to.have.length(1);
    expect(checkSource('fixture.ts', source, new Set(['fixture.ts:Wasm']))).to.deep.equal([]);
  });
});
