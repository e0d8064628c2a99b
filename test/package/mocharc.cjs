'use strict';
// The package check (scripts/package-check.sh): the installed copy's own tests, then the CLI
// tests of the suite against it (SWITCHYARD_CLI), then the check that every verb ran.
module.exports = {
  'node-option': ['import=tsx'],
  spec: [
    'test/package/installed.check.ts',
    'test/integration/process/cli.test.ts',
    'test/integration/agents/cli.test.ts',
    'test/integration/queues/cli.test.ts',
    'test/integration/queues/cli-upload.test.ts',
    'test/integration/postman/postman-env.test.ts',
    'test/package/verbs.check.ts',
  ],
  reporter: 'test/helpers/reporter.cjs',
  timeout: 20000,
  exit: true,
};
