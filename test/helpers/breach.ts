/**
 * The attempts of the assume-breach tests (README "Security model"): tenant code that holds its
 * runner's real `process` (AppOptions.assumeBreach.runnerProcess) tries the host's network, sockets, processes,
 * secrets and files, children and its own privileges, and reports each attempt as `name: outcome`
 * (`connected` / `allowed` when it worked, an error code when it did not). Shared by the code-step
 * and browser-script tests, so both layers face the same attempts.
 */

/** What every attempt reports when it worked. */
export const WORKED = ['connected', 'allowed'];

/** The attempts that must fail, by name. */
export const MUST_FAIL = [
  'redis',
  'pg',
  'service',
  'listener',
  'pgSocket',
  'killService',
  'killSleeper',
  'debugService',
  'readSecret',
  'readBootstrap',
  'seesDataDir',
  'write',
  'writeTmp',
  'spawn',
  'execve',
  'setuid',
] as const;

/**
 * The body of an async function returning the report. `inputs` is an expression giving
 * `{servicePort, listenerPort, pgSocket, servicePid, sleeperPid, dataDir}`.
 */
export function breachAttempts(inputs: string): string {
  return `
const i = ${inputs};
const req = process.mainModule.require;
const netm = req('net'), fs = req('fs'), { setTimeout, clearTimeout } = req('timers');
const settle = (socket) => new Promise((resolve) => {
  const timer = setTimeout(() => { socket.destroy(); resolve('no answer'); }, 2000);
  socket.on('connect', () => { clearTimeout(timer); socket.destroy(); resolve('connected'); });
  socket.on('error', (e) => { clearTimeout(timer); resolve(e.code || e.message); });
});
const tcp = (port) => { try { return settle(netm.connect(port, '127.0.0.1')); } catch (e) { return e.code || e.message; } };
const unix = (p) => { try { return settle(netm.connect({ path: p })); } catch (e) { return e.code || e.message; } };
const t = (f) => { try { f(); return 'allowed'; } catch (e) { return e.code || e.message; } };
return {
  redis: await tcp(6379),
  pg: await tcp(5432),
  service: await tcp(i.servicePort),
  listener: await tcp(i.listenerPort),
  pgSocket: await unix(i.pgSocket),
  killService: t(() => process.kill(i.servicePid, 'SIGKILL')),
  killSleeper: t(() => process.kill(i.sleeperPid, 'SIGKILL')),
  debugService: t(() => process._debugProcess(i.servicePid)),
  readSecret: t(() => fs.readFileSync(i.dataDir + '/secret.key')),
  readBootstrap: t(() => fs.readFileSync(i.dataDir + '/bootstrap.json')),
  seesDataDir: t(() => fs.readdirSync(i.dataDir)),
  write: t(() => fs.writeFileSync(i.dataDir + '/escaped', 'x')),
  writeTmp: t(() => fs.writeFileSync('/tmp/inside', 'x')),
  spawn: t(() => req('child_process').execFileSync('/bin/true')),
  execve: t(() => process.execve('/bin/true', ['true'])),
  setuid: t(() => process.setuid(0)),
  uid: process.getuid(),
  pid: process.pid,
  env: Object.keys(process.env),
};`;
}
