import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { checkCasts } from '../../../scripts/check-tool-casts.js';
import { sourceFiles } from '../../../scripts/check-params.js';

describe('tool-argument cast check (scripts/check-tool-casts.ts)', () => {
  it('finds every assertion applied to the arguments, however they are reached', () => {
    const src = [
      'const a = args as unknown as ScriptArgs;',
      'const b = args.agentId as string;',
      "const c = (args['limit'] as number | undefined) ?? 20;",
      'const d = <string>args.chatId;',
      'const e = args!.nested?.deep as number;',
    ].join('\n');
    const found = checkCasts('src/servers/x/index.ts', src);
    expect(found.map((f) => f.line)).to.deep.equal([1, 2, 3, 4, 5]);
  });

  it('leaves typed arguments and casts of other values alone', () => {
    const src = [
      'const limit = args.limit ?? 20;',
      'const r = result as Record<string, unknown>;',
      'const n = (other.args as number) + 1;',
      'const t = taskResult(args) as Output;',
    ].join('\n');
    expect(checkCasts('src/servers/x/index.ts', src)).to.deep.equal([]);
  });

  it('src/servers has none', () => {
    const found = sourceFiles('src/servers').flatMap((p) => checkCasts(p, readFileSync(p, 'utf8')));
    expect(found).to.deep.equal([]);
  });
});
