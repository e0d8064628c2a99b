'use strict';
// Mocha loads the TypeScript specs through tsx (`--import=tsx`), and runs the spec files in
// TEST_JOBS worker processes at once (default 3): most of a test's time is spent waiting for the
// processes, browsers and stores it talks to (the whole suite keeps these 2-core machines' CPU
// less than half busy with two). Every test keeps to its own data folder, sqlite
// file, PostgreSQL schema, Redis prefix and ports, so files never meet.
module.exports = {
  'node-option': ['import=tsx'],
  parallel: true,
  jobs: Number(process.env.TEST_JOBS || 3),
  spec: ['test/**/*.test.ts'],
  reporter: 'test/helpers/reporter.cjs',
  timeout: 20000,
  exit: true,
};
