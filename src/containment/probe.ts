/**
 * Which layers of code isolation this machine allows (README.md "Levels"), found at start by
 * starting a contained process and checking from outside what it can reach: CODE_ISOLATION
 * `auto` uses every layer that works and names the missing ones, `strict` refuses to start
 * without all three, `process` uses the language and process layers only.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { launchCommand, type LaunchPlan } from './launch.js';
import { runnerUsers, type RunnerUsers } from './users.js';

export type IsolationMode = 'auto' | 'strict' | 'process';

/** What is in force (startup log, /readyz `details.isolation`; openapi/health.yaml IsolationState). */
export interface IsolationReport {
  mode: IsolationMode;
  /** `namespaces`: the language, process and operating-system layers; `process`: the first two. */
  level: 'namespaces' | 'process';
  layers: { language: string; process: string; os: string };
  /** What `auto` could not use here, and how to get it. */
  missing: string[];
}

export interface Isolation {
  readonly report: IsolationReport;
  readonly plan: LaunchPlan;
  /** The users runners switch to (a root service), or undefined (runners keep the service's own unprivileged user). */
  readonly users: RunnerUsers | undefined;
}

export class IsolationUnavailableError extends Error {}

const BWRAP_HINT =
  'install bubblewrap (`apt-get install -y bubblewrap`) and allow user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0) when the service does not run as root';

/** A program on PATH (or at an absolute path), or undefined. */
export function findProgram(name: string, searchPath = process.env.PATH ?? '/usr/bin:/bin'): string | undefined {
  const dirs = name.includes('/') ? [''] : searchPath.split(':').filter(Boolean);
  for (const dir of dirs) {
    const file = dir ? path.join(dir, name) : name;
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * Run inside the contained process: switch to the given user as the runners do, then report the
 * user, the processes it can see and what a TCP connection to the host's loopback does.
 */
const PROBE_SCRIPT = `
const [uid, port] = process.argv.slice(1).map(Number);
if (uid > 0 && process.getuid() === 0) { process.setgroups([]); process.setgid(uid); process.setuid(uid); }
const out = { uid: process.getuid(), pids: require('fs').readdirSync('/proc').filter((d) => /^\\d+$/.test(d)).length };
const done = (net) => { out.net = net; process.stdout.write(JSON.stringify(out)); process.exit(0); };
const s = require('net').connect(port, '127.0.0.1');
s.on('connect', () => done('connected'));
s.on('error', (e) => done(String(e.code)));
`;

interface ProbeResult {
  uid?: number;
  pids?: number;
  net?: string;
  /** Connections the host's listener received from the probe. */
  reached: number;
  error?: string;
}

async function runProbe(plan: LaunchPlan, uid: number | undefined, nodePath: string): Promise<ProbeResult> {
  let reached = 0;
  const listener = net.createServer((s) => {
    reached += 1;
    s.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', () => resolve()));
  const port = (listener.address() as net.AddressInfo).port;
  try {
    const { file, args } = launchCommand(plan, { readOnly: [nodePath], maxProcesses: 64 }, [
      nodePath,
      '-e',
      PROBE_SCRIPT,
      String(uid ?? 0),
      String(port),
    ]);
    const child = spawn(file, args, { env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-1000)));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('error', (e) => {
        err = e.message;
      });
      child.on('close', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    if (code !== 0) return { reached, error: err.trim().split('\n').pop() || `exit code ${code}` };
    try {
      return { ...(JSON.parse(out) as Omit<ProbeResult, 'reached'>), reached };
    } catch {
      return { reached, error: `unreadable answer: ${out.slice(0, 200)}` };
    }
  } finally {
    listener.close();
  }
}

function processLayer(users: RunnerUsers | undefined): string {
  const who = users
    ? `switched to its own unprivileged user (uid ${users.describe()})`
    : `under the service's own unprivileged user (uid ${process.getuid?.() ?? '?'})`;
  return `a runner process per organisation, ${who}, with an empty environment and Node's permission model`;
}

export interface ProbeOptions {
  mode: IsolationMode;
  /** The Node binary runners use (the service's own). */
  nodePath?: string;
  /** Where programs are looked for (default PATH). */
  searchPath?: string;
}

const probes = new Map<string, Promise<Isolation>>();

/**
 * Finds what works here, once per process and set of options (every app of the process, and
 * so every runner it starts, shares the answer and the block of user ids); rejects with
 * IsolationUnavailableError when `mode` cannot be had.
 */
export function probeIsolation(opts: ProbeOptions): Promise<Isolation> {
  const key = JSON.stringify([opts.mode, opts.nodePath, opts.searchPath]);
  let probe = probes.get(key);
  if (!probe) {
    probe = detect(opts);
    probes.set(key, probe);
    // A failed probe is not kept: the machine may be fixed before the next start in this process.
    probe.catch(() => probes.delete(key));
  }
  return probe;
}

async function detect(opts: ProbeOptions): Promise<Isolation> {
  const nodePath = opts.nodePath ?? process.execPath;
  const root = process.getuid?.() === 0;
  const users = root ? runnerUsers : undefined;
  const setpriv = findProgram('setpriv', opts.searchPath);
  const prlimit = findProgram('prlimit', opts.searchPath);
  const missing: string[] = [];
  if (!prlimit)
    missing.push('prlimit (util-linux) is missing: the process count of runners is bounded by the watchdog only');
  const language =
    'isolated-vm: each code step runs in a V8 isolate of its own heap limit and CPU time limit; only copied values cross';
  const base: LaunchPlan = { bwrap: undefined, prlimit, setpriv, env: findProgram('env', opts.searchPath) };
  let os =
    "not in force (CODE_ISOLATION=process): runners share the host's network, file system view (limited by Node's permission model) and process table";
  let plan = base;
  if (opts.mode !== 'process') {
    const bwrap = findProgram('bwrap', opts.searchPath);
    const why = bwrap
      ? await namespacesWork({ ...base, bwrap }, users, nodePath)
      : 'bubblewrap (bwrap) is not installed';
    if (why === undefined) {
      plan = { ...base, bwrap };
      os =
        "bubblewrap: no network (the host's loopback included), own PID, IPC and UTS namespaces, a read-only view of only what the runner needs, a private /tmp; memory and process count enforced by a watchdog on the contained processes and RLIMIT_NPROC";
    } else {
      if (opts.mode === 'strict')
        throw new IsolationUnavailableError(
          `CODE_ISOLATION=strict: the operating-system layer does not work here: ${why}; ${BWRAP_HINT}`,
        );
      missing.unshift(`operating-system layer: ${why}; ${BWRAP_HINT}`);
      os = `not in force: ${why}`;
    }
  }
  if (plan.bwrap === undefined) {
    const why = await processWorks(base, users, nodePath);
    if (why) throw new IsolationUnavailableError(`Code runners cannot be started: ${why}`);
  }
  const report: IsolationReport = {
    mode: opts.mode,
    level: plan.bwrap ? 'namespaces' : 'process',
    layers: { language, process: processLayer(users), os },
    missing,
  };
  return { report, plan, users };
}

/**
 * undefined when a contained process starts, switches user, sees only its own namespace and cannot
 * reach the host's loopback.
 */
async function namespacesWork(
  plan: LaunchPlan,
  users: RunnerUsers | undefined,
  nodePath: string,
): Promise<string | undefined> {
  const uid = users?.take();
  try {
    const r = await runProbe(plan, uid, nodePath);
    if (r.error) return `a contained process did not start (${r.error})`;
    if (r.reached > 0 || r.net === 'connected') return "a contained process reached the host's loopback";
    if ((r.pids ?? 99) > 3) return `a contained process saw ${r.pids} processes (no PID namespace)`;
    if (r.uid === 0) return 'a contained process kept the root user';
    return undefined;
  } finally {
    users?.give(uid);
  }
}

async function processWorks(
  plan: LaunchPlan,
  users: RunnerUsers | undefined,
  nodePath: string,
): Promise<string | undefined> {
  const uid = users?.take();
  try {
    const r = await runProbe(plan, uid, nodePath);
    if (r.error) return `a runner process did not start (${r.error})`;
    if (r.uid === 0) return 'a runner process kept the root user';
    return undefined;
  } finally {
    users?.give(uid);
  }
}
