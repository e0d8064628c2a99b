/**
 * The supervisor of contained runners (src/containment/supervisor.ts, README.md "Supervisor"),
 * with real processes contained as this machine allows (probeIsolation): a small runner built on
 * the runners' shared module. Its ready handshake and user check, a start that times out or
 * ends, the watchdog's kill over the memory ceiling, and the kill of the whole tree; and what the
 * browser box uses besides (src/browser/box.ts): its environment, a ready message that must carry
 * more, a `failed` message, the owner's own limits, processes of its own, and `end()`.
 */
import { expect } from 'chai';
import {
  probeIsolation,
  RUNNER_COMMON_PATH,
  RUNNER_PROTOCOL,
  superviseRunner,
  type Isolation,
  type SupervisorOptions,
  type TreeBreach,
} from '../../../src/containment/index.js';

/** A runner: the shared module's start options and user switch (unless `noSwitch`), then `body`. */
function runnerArgv(body: string, { noSwitch = false } = {}): (uid: number | undefined) => string[] {
  const code = `const c = require(${JSON.stringify(RUNNER_COMMON_PATH)});
    const o = c.startOptions();
    ${noSwitch ? '' : 'c.becomeUser(o.uid);'}
    const ipc = c.channel(c.PROTOCOL.code, {}, () => undefined);
    ${body}`;
  return (uid) => [process.execPath, '-e', code, 'runner.cjs', JSON.stringify({ uid })];
}

/** Whether `pid` is gone within 5 s (a killed process of the tree is reaped by its own parent, a moment later). */
async function gonePid(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

const exited = (proc: { onExit(fn: () => void): unknown }) => new Promise<void>((r) => proc.onExit(r));

describe('containment: the runners’ supervisor', function () {
  this.timeout(30_000);
  let isolation: Isolation;

  before(async () => {
    isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'process' ? 'process' : 'auto' });
  });

  const options = (argv: SupervisorOptions['argv'], over: Partial<SupervisorOptions> = {}): SupervisorOptions => ({
    isolation,
    argv,
    view: { readOnly: [process.execPath, RUNNER_COMMON_PATH], maxProcesses: 64 },
    cwd: '/tmp',
    protocol: RUNNER_PROTOCOL.code,
    readyTimeoutMs: 10_000,
    stderrChars: 100,
    watch: { busyMs: 50, idleMs: 200, walkEvery: { busy: 1, idle: 5 }, ceilingBytes: () => 1024 ** 3, from: 'ready' },
    onLimit: () => undefined,
    ...over,
  });

  it('a runner that says ready and runs as its own user is ready; kill() ends its whole tree and the exit is reported', async () => {
    const proc = superviseRunner(options(runnerArgv('ipc.ready(); setInterval(() => undefined, 1000);')));
    const gone = exited(proc);
    expect(await proc.ready).to.equal(undefined);
    expect(proc.alive).to.equal(true);
    if (process.platform === 'linux') {
      expect(proc.tree.length).to.equal(isolation.plan.bwrap ? 3 : 1);
      expect(proc.tree[0]).to.equal(proc.pid);
    }
    const tree = [...proc.tree];
    proc.kill();
    expect(proc.dead).to.equal(true);
    await gone;
    for (const pid of tree) expect(await gonePid(pid), `pid ${pid}`).to.equal(true);
  });

  it('a runner that never says ready is killed at the timeout; one that ends first is reported with its stderr', async () => {
    const silent = superviseRunner(options(runnerArgv('setInterval(() => undefined, 1000);'), { readyTimeoutMs: 500 }));
    const silentGone = exited(silent);
    expect(await silent.ready).to.deep.equal({ kind: 'timeout' });
    await silentGone;

    const long = 'x'.repeat(300);
    const ending = superviseRunner(
      options(runnerArgv(`process.stderr.write('first\\n${long}\\nthe last line\\n'); process.exit(3);`)),
    );
    expect(await ending.ready).to.deep.equal({ kind: 'exit' });
    expect(ending.stderr.length).to.be.at.most(100);
    expect(ending.stderrLine()).to.equal('the last line');
  });

  it('over the memory ceiling the watchdog names the limit and kills the tree', async () => {
    const breaches: TreeBreach[] = [];
    const proc = superviseRunner(
      options(runnerArgv('ipc.ready(); setInterval(() => undefined, 1000);'), {
        watch: { busyMs: 50, idleMs: 50, walkEvery: { busy: 1, idle: 5 }, ceilingBytes: () => 1024, from: 'ready' },
        onLimit: (b) => breaches.push(b),
      }),
    );
    const gone = exited(proc);
    expect(await proc.ready).to.equal(undefined);
    if (process.platform !== 'linux') return proc.kill();
    await gone;
    expect(breaches).to.have.length(1);
    expect(breaches[0]!.kind).to.equal('memory');
    expect(breaches[0]).to.include({ ceilingBytes: 1024 });
  });

  it('a runner that stays root when it was given a user of its own is refused and killed', async function () {
    if (process.platform !== 'linux' || isolation.users === undefined) this.skip();
    const proc = superviseRunner(
      options(runnerArgv('ipc.ready(); setInterval(() => undefined, 1000);', { noSwitch: true })),
    );
    const gone = exited(proc);
    const failure = await proc.ready;
    expect(failure).to.include({ kind: 'user', uid: 0, expected: proc.uid });
    await gone;
  });

  it('the box’s start: the environment its owner gives, a ready message that must carry more, and a `failed` message', async () => {
    const envSeen = superviseRunner(
      options(
        runnerArgv(
          `ipc.send('ready', {}); setTimeout(() => ipc.send('ready', { home: process.env.HOME, secret: process.env.SECRET_OF_SERVICE ?? null }), 100); setInterval(() => undefined, 1000);`,
        ),
        { env: { HOME: '/tmp/box-home' }, readyWhen: (msg) => typeof msg.home === 'string' },
      ),
    );
    process.env.SECRET_OF_SERVICE = 'not for runners';
    try {
      expect(await envSeen.ready).to.equal(undefined);
    } finally {
      delete process.env.SECRET_OF_SERVICE;
    }
    expect(envSeen.readyMessage).to.include({ home: '/tmp/box-home', secret: null });
    await envSeen.end();
    expect(envSeen.dead).to.equal(true);

    const failing = superviseRunner(
      options(runnerArgv(`ipc.send('failed', { error: 'Chromium is missing' }); setInterval(() => undefined, 1000);`), {
        failedMessage: true,
      }),
    );
    const gone = exited(failing);
    expect(await failing.ready).to.deep.equal({ kind: 'failed', error: 'Chromium is missing' });
    await gone;

    // Without failedMessage a `failed` message is not the runner's to send: it is ignored until the timeout.
    const ignored = superviseRunner(
      options(runnerArgv(`ipc.send('failed', { error: 'x' }); setInterval(() => undefined, 1000);`), {
        readyTimeoutMs: 500,
      }),
    );
    expect(await ignored.ready).to.deep.equal({ kind: 'timeout' });
  });

  it('a long-lived runner with processes of its own: the owner’s limit ends it, and end() kills a process started after the last walk', async function () {
    if (process.platform !== 'linux') this.skip();
    // The runner starts a child (allowed: maxProcesses) and reports its pid; the owner's inspect then names a limit.
    const child = `const k = require('node:child_process').spawn('/usr/bin/sleep', ['30'], { stdio: 'ignore' });`;
    let over = false;
    const breaches: TreeBreach[] = [];
    const proc = superviseRunner(
      options(
        runnerArgv(`ipc.ready(); ${child} ipc.send('log', { pid: k.pid }); setInterval(() => undefined, 1000);`),
        {
          view: { readOnly: [process.execPath, RUNNER_COMMON_PATH], maxProcesses: 64 },
          watch: {
            busyMs: 50,
            idleMs: 50,
            walkEvery: { busy: 1, idle: 1 },
            ceilingBytes: () => Number.POSITIVE_INFINITY,
            maxProcesses: Number.POSITIVE_INFINITY,
            from: 'ready',
            inspect: async ({ pids }) => (over ? `over the owner's limit with ${pids.length} processes` : undefined),
          },
          onLimit: (b) => breaches.push(b),
        },
      ),
    );
    const childPid = new Promise<number>((resolve) =>
      proc.child.on('message', (m: { t?: string; pid?: number }) => m.t === 'log' && resolve(m.pid!)),
    );
    const gone = exited(proc);
    expect(await proc.ready).to.equal(undefined);
    const inner = await childPid;
    await new Promise((r) => setTimeout(r, 300));
    expect(proc.alive, 'a process of its own is within maxProcesses').to.equal(true);
    over = true;
    await gone;
    expect(breaches).to.have.length(1);
    expect(breaches[0]).to.deep.include({ kind: 'owner' });
    expect((breaches[0] as { reason: string }).reason).to.match(/^over the owner's limit with \d+ processes$/);
    expect(await gonePid(inner), 'the runner’s own child').to.equal(true);

    // end(): no sample after the start, and the child started after the user check's walk: only a fresh walk finds it.
    const quiet = superviseRunner(
      options(
        runnerArgv(
          `ipc.ready(); setTimeout(() => { ${child} ipc.send('log', { pid: k.pid }); }, 300); setInterval(() => undefined, 1000);`,
        ),
        {
          watch: {
            busyMs: 60_000,
            idleMs: 60_000,
            walkEvery: { busy: 1, idle: 1 },
            ceilingBytes: () => Number.POSITIVE_INFINITY,
            maxProcesses: Number.POSITIVE_INFINITY,
            from: 'ready',
          },
        },
      ),
    );
    const quietChild = new Promise<number>((resolve) =>
      quiet.child.on('message', (m: { t?: string; pid?: number }) => m.t === 'log' && resolve(m.pid!)),
    );
    expect(await quiet.ready).to.equal(undefined);
    const late = await quietChild;
    await quiet.end();
    expect(await gonePid(late), 'a child started after the last walk').to.equal(true);
    let reported = false;
    quiet.onExit(() => (reported = true));
    await Promise.resolve();
    expect(reported, 'onExit after the exit runs at once').to.equal(true);
  });
});
