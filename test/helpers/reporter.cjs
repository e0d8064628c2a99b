'use strict';
// Spec reporter plus the closing line CI reads: "N passed, N failed, N skipped".
// TEST_TIMINGS=<file>: also writes each spec file's wall time (ms, slowest first) to that file.
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_END, EVENT_HOOK_END } = Mocha.Runner.constants;

class ClosingLineReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const timings = process.env.TEST_TIMINGS;
    const perFile = new Map();
    let last = Date.now();
    if (timings) {
      const tally = (runnable) => {
        const now = Date.now();
        const file = runnable.file ?? runnable.parent?.file ?? '(none)';
        perFile.set(file, (perFile.get(file) ?? 0) + (now - last));
        last = now;
      };
      runner.on(EVENT_TEST_END, tally);
      runner.on(EVENT_HOOK_END, tally);
    }
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      process.stdout.write(`\n${s.passes || 0} passed, ${s.failures || 0} failed, ${s.pending || 0} skipped\n`);
      if (timings) {
        const root = process.cwd();
        const lines = [...perFile].sort((a, b) => b[1] - a[1]).map(([f, ms]) => `${ms}\t${path.relative(root, f)}`);
        fs.writeFileSync(timings, `${lines.join('\n')}\n`);
      }
    });
  }
}
module.exports = ClosingLineReporter;
