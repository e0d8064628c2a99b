/**
 * The module the runner programs share (src/containment/runner-common.cjs, README.md "Runner
 * programs"): what acts on a process — start options, the user switch and root check, the IPC
 * envelope — in real child processes started as the runners are (one JSON argument, an empty
 * environment); the file tally and error text in this one.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { RUNNER_COMMON_PATH, RunnerUsers, runnerOptionsArg } from '../../../src/containment/index.js';

interface Tally {
  list: Array<{ name: string; data: Buffer }>;
  bytes: number;
  add(file: { name: string; data: Buffer }): string | undefined;
}
const common = createRequire(import.meta.url)(RUNNER_COMMON_PATH) as {
  EXIT: { protocol: number; user: number };
  FileTally: new (
    limits: { files: number; fileBytes: number; totalBytes: number },
    sameFile?: (a: { name: string }, b: { name: string }) => boolean,
  ) => Tally;
  text(v: unknown): string;
  messageOf(err: unknown): string;
};

/** `node -e <body> runner.cjs <arg>`: the shared module as `common`, and `arg` where a runner has its options. */
function runChild(body: string, arg: string): { status: number | null; out: string } {
  const code = `const common = require(${JSON.stringify(RUNNER_COMMON_PATH)});\n${body}`;
  const r = spawnSync(process.execPath, ['-e', code, 'runner.cjs', arg], { encoding: 'utf8', env: {} });
  return { status: r.status, out: r.stdout };
}

const root = process.getuid?.() === 0;

describe('containment: the runners’ shared module', function () {
  this.timeout(20_000);

  describe('start options', () => {
    const options = (arg: string) => runChild('process.stdout.write(JSON.stringify(common.startOptions()));', arg);

    it('are the one JSON argument; uid only as a positive safe integer, breach only as a known mode', () => {
      const ok = options(runnerOptionsArg({ playwright: '/x', uid: 1_900_000_001, breach: 'process' }));
      expect(ok.status).to.equal(0);
      expect(JSON.parse(ok.out)).to.deep.equal({ playwright: '/x', uid: 1_900_000_001, breach: 'process' });
      for (const [uid, breach] of [
        [0, 'yes'],
        [-5, undefined],
        ['1000', 'unrestricted '],
        [1.5, 1],
      ]) {
        const r = options(runnerOptionsArg({ uid, breach }));
        expect(r.status).to.equal(0);
        expect(JSON.parse(r.out), `${uid} ${breach}`).to.deep.equal({ breach: 'off' });
      }
    });

    it('a runner whose argument is not a JSON object ends itself (EX_SOFTWARE)', () => {
      for (const arg of ['', '{', '[1]', 'null', '7']) {
        expect(options(arg).status, arg).to.equal(common.EXIT.protocol);
      }
    });
  });

  describe('the user', () => {
    const become = (arg: string) =>
      runChild(
        `common.becomeUser(common.startOptions().uid);
         process.stdout.write(JSON.stringify([process.getuid(), process.geteuid(), process.getgid(), process.getgroups()]));`,
        arg,
      );

    it('a runner started as root switches to the user it is given: user, group, no supplementary groups', function () {
      if (!root) this.skip();
      const users = new RunnerUsers();
      const uid = users.take();
      const r = become(runnerOptionsArg({ uid }));
      expect(r.status).to.equal(0);
      // Node's getgroups() always lists the effective group: nothing else remains.
      expect(JSON.parse(r.out)).to.deep.equal([uid, uid, uid, [uid]]);
    });

    it('a runner that is root and given no user refuses to run tenant code (EX_CONFIG)', function () {
      if (!root) this.skip();
      expect(become(runnerOptionsArg({})).status).to.equal(common.EXIT.user);
      expect(become(runnerOptionsArg({ uid: 0 })).status).to.equal(common.EXIT.user);
    });

    it('a runner of an unprivileged service keeps the service’s user', function () {
      if (root) this.skip();
      const r = become(runnerOptionsArg({ uid: 1_900_000_001 }));
      expect(r.status).to.equal(0);
      expect(JSON.parse(r.out)[0]).to.equal(process.getuid?.());
    });
  });

  describe('the IPC envelope', () => {
    it('{v, t} both ways: a known type reaches its handler, another version or type goes to `invalid`; the runner exits once its parent is gone', async () => {
      const code = `const common = require(${JSON.stringify(RUNNER_COMMON_PATH)});
        const ipc = common.channel(3, { ping: (m) => ipc.send('pong', { n: m.n }) }, (m) => ipc.send('refused', { got: m }));
        ipc.ready();`;
      const child = spawn(process.execPath, ['-e', code, 'runner.cjs', '{}'], {
        env: {},
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      const next = () => new Promise<unknown>((resolve) => child.once('message', resolve));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      try {
        expect(await next()).to.deep.equal({ v: 3, t: 'ready' });
        child.send({ v: 3, t: 'ping', n: 1 });
        expect(await next()).to.deep.equal({ v: 3, t: 'pong', n: 1 });
        for (const bad of [{ v: 2, t: 'ping', n: 2 }, { v: 3, t: 'toString' }, { v: 3 }, 'ping', 7]) {
          child.send(bad);
          expect(await next(), JSON.stringify(bad)).to.deep.equal({ v: 3, t: 'refused', got: bad });
        }
        child.disconnect();
        expect(await exited).to.equal(0);
      } finally {
        child.kill('SIGKILL');
      }
    });
  });

  describe('the file tally', () => {
    const file = (name: string, size: number) => ({ name, data: Buffer.alloc(size) });
    const limits = { files: 2, fileBytes: 10, totalBytes: 15 };

    it('holds a count, bytes per file and bytes together, and keeps nothing of a file it refuses', () => {
      const t = new common.FileTally(limits);
      expect(t.add(file('a', 8))).to.equal(undefined);
      expect(t.add(file('b', 11))).to.equal('fileBytes');
      expect(t.add(file('b', 8))).to.equal('totalBytes');
      expect(t.add(file('a', 7))).to.equal(undefined); // without sameFile, a name again is another file
      expect(t.add(file('c', 0))).to.equal('files');
      expect(t.list.map((f) => f.name)).to.deep.equal(['a', 'a']);
      expect(t.bytes).to.equal(15);
    });

    it('with sameFile, a file replaces its namesake: its bytes leave the total and it takes no second place', () => {
      const t = new common.FileTally(limits, (a, b) => a.name === b.name);
      expect(t.add(file('a', 8))).to.equal(undefined);
      expect(t.add(file('b', 7))).to.equal(undefined);
      expect(t.add(file('a', 9))).to.equal('totalBytes');
      expect(t.add(file('a', 2))).to.equal(undefined);
      expect(t.add(file('b', 10))).to.equal(undefined);
      expect(t.add(file('c', 1))).to.equal('files');
      expect(t.list.map((f) => [f.name, f.data.length])).to.deep.equal([
        ['a', 2],
        ['b', 10],
      ]);
      expect(t.bytes).to.equal(12);
    });
  });

  it('error text: an error’s message, else the value as text (JSON where it has one)', () => {
    expect(common.messageOf(new TypeError('boom'))).to.equal('boom');
    expect(common.messageOf({ message: 42 })).to.equal('42');
    expect(common.messageOf('plain')).to.equal('plain');
    expect(common.messageOf({ code: 1 })).to.equal('{"code":1}');
    expect(common.messageOf(undefined)).to.equal('');
    expect(common.text(10n)).to.equal('10');
  });
});
