'use strict';
// Mocha loads the TypeScript specs through tsx (`--import=tsx`), and runs the spec files in
// TEST_JOBS worker processes at once (default 3): most of a test's time is spent waiting for the
// processes, browsers and stores it talks to (the whole suite keeps these 2-core machines' CPU
// less than half busy with two). Every test keeps to its own data folder, sqlite
// file, PostgreSQL schema, Redis prefix and ports, so files never meet.
//
// The workers take the files in the order listed, so the long ones go first (browsers, child
// processes, the contract walk) and the many short ones fill in behind them: no long file starts
// last and keeps one worker busy alone at the end.
const fs = require('node:fs');
const path = require('node:path');

const LONG_FIRST = [
  'test/integration/browser/',
  'test/integration/console/',
  'test/integration/process/',
  'test/contract/',
];
const rank = (file) => {
  const i = LONG_FIRST.findIndex((prefix) => file.startsWith(prefix));
  return i === -1 ? LONG_FIRST.length : i;
};
// TEST_EXCLUDE: comma-separated path prefixes of spec files left out (.ci/run's second Node).
const excluded = (process.env.TEST_EXCLUDE || '').split(',').filter(Boolean);
const specs = fs
  .readdirSync(path.join(__dirname, 'test'), { recursive: true })
  .map((f) => `test/${f.split(path.sep).join('/')}`)
  .filter((f) => f.endsWith('.test.ts') && !excluded.some((prefix) => f.startsWith(prefix)))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

module.exports = {
  'node-option': ['import=tsx'],
  parallel: true,
  jobs: Number(process.env.TEST_JOBS || 3),
  spec: specs,
  reporter: 'test/helpers/reporter.cjs',
  timeout: 20000,
  exit: true,
};
