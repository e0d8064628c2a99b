#!/usr/bin/env node
// `switchyard …` (installed package, `npx switchyard`): the compiled CLI, dist/cli.js
// (`npm run build`; a checkout builds it on `npm ci`). `switchyard start` and `switchyard worker`
// become the service and the worker as `npm start` and `npm run worker` run them: this process
// is replaced (process.execve; a child where Node lacks it) by `node --max-semi-space-size=2
// dist/main.js` (or dist/worker.js) with MALLOC_ARENA_MAX=2 unless set. Source maps are off,
// as under `npm start`; NODE_OPTIONS=--enable-source-maps turns them on (stack traces then name
// the TypeScript sources, for about 1.5 s more start and 40 MB).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The Node flags of `npm start` and `npm run worker` (package.json scripts). */
const RUNTIME_FLAGS = ['--max-semi-space-size=2'];
const PROGRAMS = { start: 'main', worker: 'worker' };

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('switchyard: dist/ is missing: run `npm run build` in the checkout first\n');
  process.exit(2);
}
const [verb, ...rest] = process.argv.slice(2);
const program = rest.length === 0 && Object.hasOwn(PROGRAMS, verb ?? '') ? PROGRAMS[verb] : undefined;
if (program === undefined) await import(cli.href);
else {
  const args = [
    ...RUNTIME_FLAGS,
    ...process.execArgv,
    fileURLToPath(new URL(`../dist/${program}.js`, import.meta.url)),
  ];
  const env = { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX || '2' };
  if (typeof process.execve === 'function') process.execve(process.execPath, [process.execPath, ...args], env);
  // Node before 22.15: a child that gets this process's signals and exit status.
  const child = spawn(process.execPath, args, { env, stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
