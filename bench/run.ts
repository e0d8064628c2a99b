/** npm run bench [name…] — runs the named benchmarks (default: all). Not a test. */
const benches: Record<string, () => Promise<{ run: () => Promise<void> }>> = {
  'token-verify': () => import('./token-verify.js'),
  'token-limits': () => import('./token-limits.js'),
  triggers: () => import('./triggers.js'),
  discovery: () => import('./discovery.js'),
  gateway: () => import('./gateway.js'),
  channel: () => import('./channel.js'),
  events: () => import('./events.js'),
  queues: () => import('./queues.js'),
  runs: () => import('./runs.js'),
  tenants: () => import('./tenants.js'),
  tracing: () => import('./tracing.js'),
  browser: () => import('./browser.js'),
  'tenants-browser': () => import('./tenants-browser.js'),
  'discovery-real': () => import('./discovery-real.js'),
  production: () => import('./production.js'),
  console: () => import('./console.js'),
  'console-runs': () => import('./console-runs.js'),
  'run-indexes': () => import('./run-indexes.js'),
};

const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : Object.keys(benches);
for (const name of names) {
  const load = benches[name];
  if (!load) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  await (await load()).run();
}
