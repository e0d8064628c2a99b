'use strict';
// Mocha loads the TypeScript specs through tsx (`--import=tsx`). On Node 20, whose require(esm)
// is on by default since 20.19, mocha require()-ing those specs crashes the process
// (segmentation fault, seen on 20.20 here), so there require(esm) is switched off and mocha
// falls back to import(). Node 22 and 24 load them fine and keep their default, as users run it.
const major = Number(process.versions.node.split('.')[0]);

module.exports = {
  'node-option': ['import=tsx', ...(major < 22 ? ['no-experimental-require-module'] : [])],
  spec: ['test/**/*.test.ts'],
  reporter: 'test/helpers/reporter.cjs',
  timeout: 20000,
  exit: true,
};
