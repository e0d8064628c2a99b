'use strict';
// Mocha loads the TypeScript specs through tsx (`--import=tsx`).
module.exports = {
  'node-option': ['import=tsx'],
  spec: ['test/**/*.test.ts'],
  reporter: 'test/helpers/reporter.cjs',
  timeout: 20000,
  exit: true,
};
