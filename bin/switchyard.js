#!/usr/bin/env node
// `switchyard …` (installed package, `npx switchyard`): the compiled CLI, dist/cli.js
// (`npm run build`; a checkout builds it on `npm ci`). `switchyard start` and `switchyard worker`
// run the service and the worker. Stack traces name the TypeScript sources (source maps).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('switchyard: dist/ is missing: run `npm run build` in the checkout first\n');
  process.exit(2);
}
process.setSourceMapsEnabled(true);
await import(cli.href);
