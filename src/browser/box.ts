/**
 * One organisation's browser box as the service sees it (src/browser/README.md "Pool"): the
 * contained process of src/browser/box-server.cjs (playwright-core's browser server with
 * Chromium as its child), started from the command line src/browser/contain.ts makes, checked
 * from outside once it is ready (every process of the box runs as the box's own unprivileged
 * user), reached on its Unix socket, and watched while it lives (src/browser/watchdog.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { killTree, processTree, RUNNER_MESSAGE, RUNNER_PROTOCOL, uidOf } from '../containment/index.js';
import type { BoxLaunch } from './contain.js';

/** Version of the messages between the service and a box (runner-common.cjs PROTOCOL, read by box-server.cjs too). */
const BOX_PROTOCOL = RUNNER_PROTOCOL.box;
/** A box that has not said it is ready (Chromium started, the server listening) by then is killed. */
const START_TIMEOUT_MS = 30_000;

export class BoxStartError extends Error {}

/** A running box: its endpoint, its process, and its end. */
export class BrowserBox {
  private constructor(
    private readonly child: ChildProcess,
    private readonly endpoint: string,
    readonly launch: BoxLaunch,
  ) {}

  /** Starts the box and waits until its Playwright server listens and its processes run as its user. */
  static async start(launch: BoxLaunch): Promise<BrowserBox> {
    const child = spawn(launch.file, launch.args, {
      cwd: '/',
      // Only what the box is given: the service's environment (secrets included) is not its business.
      env: launch.env,
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-4000);
    });
    child.once('error', () => launch.release());
    child.once('exit', () => launch.release());
    try {
      const wsPath = await ready(child, () => stderr);
      await checkUsers(child, launch);
      return new BrowserBox(child, `ws+unix://${launch.socket}:${wsPath}`, launch);
    } catch (err) {
      await kill(child);
      throw err;
    }
  }

  /** The Playwright server's endpoint, for the relay and the service's own operator; never for a script runner. */
  wsEndpoint(): string {
    return this.endpoint;
  }

  /** The box's first process (bubblewrap's, where the operating-system layer is in force). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  onExit(cb: () => void): void {
    if (!this.alive) queueMicrotask(cb);
    else this.child.once('exit', cb);
  }

  /** Ends the box and everything in it. */
  close(): Promise<void> {
    return kill(this.child);
  }
}

/** Resolves the Playwright server's path once the box says it listens; rejects with why it did not. */
function ready(child: ChildProcess, stderr: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => done(new BoxStartError(`did not start within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    );
    const onMessage = (msg: { v?: unknown; t?: unknown; wsPath?: unknown; error?: unknown }) => {
      if (msg?.v !== BOX_PROTOCOL) return;
      if (msg.t === RUNNER_MESSAGE.ready && typeof msg.wsPath === 'string' && /^\/[\w-]+$/.test(msg.wsPath))
        done(msg.wsPath);
      else if (msg.t === RUNNER_MESSAGE.failed) done(new BoxStartError(String(msg.error).slice(0, 2000)));
    };
    const onExit = (code: number | null, sig: NodeJS.Signals | null) =>
      done(
        new BoxStartError(
          `exited before it was ready (${sig ?? `exit code ${code}`})${stderr() ? `: ${stderr().trim().split('\n').slice(-3).join(' | ')}` : ''}`,
        ),
      );
    const onError = (err: Error) => done(new BoxStartError(`could not be started: ${err.message}`));
    function done(outcome: string | Error): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      child.off('error', onError);
      if (typeof outcome === 'string') resolve(outcome);
      else reject(outcome);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/**
 * Every process of the box below bubblewrap's two runs as the box's user (or the service's own
 * unprivileged user), never root: a box whose program did not switch, or that started something
 * under another user, is not used.
 */
async function checkUsers(child: ChildProcess, launch: BoxLaunch): Promise<void> {
  if (process.platform !== 'linux' || child.pid === undefined) return;
  const expected = launch.uid ?? process.getuid?.();
  const tree = await processTree(child.pid);
  const inside = tree.slice(launch.namespaces ? 2 : 0);
  if (inside.length === 0) throw new BoxStartError('its processes could not be found');
  for (const pid of inside) {
    const actual = await uidOf(pid);
    if (actual === undefined) continue;
    if (actual === 0 || actual !== expected)
      throw new BoxStartError(`a process of the box ran as user ${actual}, not as its own unprivileged user`);
  }
}

/** SIGKILL to the whole tree, deepest first, and its first process; resolves once that has exited. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  killTree(await processTree(child.pid));
  child.kill('SIGKILL');
  await exited;
}
