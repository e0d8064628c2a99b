/**
 * The containment module (src/containment/README.md): what the probe finds and reports for each
 * CODE_ISOLATION mode, the command lines it builds, the user ids it hands out, and the
 * process-tree watchdog's view of a contained program.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  bwrapArgs,
  findProgram,
  launchCommand,
  probeIsolation,
  RunnerUsers,
  sampleTree,
  killTree,
  uidOf,
  IsolationUnavailableError,
} from '../../../src/containment/index.js';

const hasBwrap = findProgram('bwrap') !== undefined;

describe('containment', function () {
  this.timeout(30_000);

  describe('probe', () => {
    it('process mode: the language and process layers only, and says so', async () => {
      const { report, plan } = await probeIsolation({ mode: 'process' });
      expect(report.mode).to.equal('process');
      expect(report.level).to.equal('process');
      expect(plan.bwrap).to.equal(undefined);
      expect(report.layers.os).to.match(/not in force \(CODE_ISOLATION=process\)/);
      expect(report.layers.language).to.match(/isolated-vm/);
      expect(report.layers.process).to.match(/per organisation/);
    });

    it('auto without bubblewrap on the search path: the process level, and the missing layer named with how to get it', async () => {
      const { report } = await probeIsolation({ mode: 'auto', searchPath: '/nonexistent' });
      expect(report.level).to.equal('process');
      expect(report.missing.join(' ')).to.match(/bubblewrap \(bwrap\) is not installed.*apt-get install -y bubblewrap/);
      expect(report.missing.join(' ')).to.match(/prlimit/);
    });

    it('strict refuses to start without bubblewrap, naming the fix', async () => {
      let error: unknown;
      try {
        await probeIsolation({ mode: 'strict', searchPath: '/nonexistent' });
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(IsolationUnavailableError);
      expect(String((error as Error).message)).to.match(/CODE_ISOLATION=strict.*apt-get install -y bubblewrap/);
    });

    it('strict and auto with bubblewrap: all three layers, found by starting a contained process', async function () {
      if (!hasBwrap) this.skip();
      const strict = await probeIsolation({ mode: 'strict' });
      expect(strict.report.level).to.equal('namespaces');
      expect(strict.report.missing.filter((m) => /operating-system/.test(m))).to.deep.equal([]);
      expect(strict.plan.bwrap).to.be.a('string');
      const auto = await probeIsolation({ mode: 'auto' });
      expect(auto.report.level).to.equal('namespaces');
    });

    it('is done once per process and options: every app shares the answer and the user ids', async () => {
      const a = await probeIsolation({ mode: 'process' });
      const b = await probeIsolation({ mode: 'process' });
      expect(a).to.equal(b);
    });
  });

  describe('command lines', () => {
    const plan = {
      bwrap: '/usr/bin/bwrap',
      prlimit: '/usr/bin/prlimit',
      setpriv: '/usr/bin/setpriv',
      env: '/usr/bin/env',
    };

    it('bubblewrap: new namespaces (network unless host), a read-only view, a bounded private /tmp, then prlimit and setpriv', () => {
      const { file, args } = launchCommand(plan, { readOnly: ['/opt/x'], maxProcesses: 64, switchTo: 1_900_000_007 }, [
        '/bin/prog',
        'a',
      ]);
      expect(file).to.equal('/usr/bin/bwrap');
      for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-net', '--die-with-parent', '--new-session'])
        expect(args).to.include(flag);
      expect(args.join(' ')).to.include('--ro-bind /usr /usr');
      expect(args.join(' ')).to.include('--ro-bind-try /opt/x /opt/x');
      expect(args.join(' ')).to.match(/--perms 1777 --size 67108864 --tmpfs \/tmp/);
      const rest = args.slice(args.indexOf('--') + 1);
      expect(rest).to.deep.equal([
        '/usr/bin/env',
        '-u',
        'PWD',
        '/usr/bin/prlimit',
        '--nproc=64:64',
        '--',
        '/usr/bin/setpriv',
        '--reuid=1900000007',
        '--regid=1900000007',
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--',
        '/bin/prog',
        'a',
      ]);
      expect(bwrapArgs({ readOnly: [], maxProcesses: 1 })).to.include('--unshare-net');
    });

    it('without bubblewrap: prlimit and setpriv (no new privileges) only, the program last', () => {
      const { file, args } = launchCommand({ ...plan, bwrap: undefined }, { readOnly: ['/opt/x'], maxProcesses: 8 }, [
        '/bin/prog',
      ]);
      expect([file, ...args]).to.deep.equal([
        '/usr/bin/prlimit',
        '--nproc=8:8',
        '--',
        '/usr/bin/setpriv',
        '--no-new-privs',
        '--',
        '/bin/prog',
      ]);
    });
  });

  describe('user ids', () => {
    let lockDir: string;
    beforeEach(() => {
      lockDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'switchyard-uids-')), 'locks');
    });
    afterEach(() => rmSync(path.dirname(lockDir), { recursive: true, force: true }));

    it('one per live process, from the block, free again once given back', () => {
      const users = new RunnerUsers({ base: 100, count: 3, lockDir });
      const a = users.take();
      const b = users.take();
      const c = users.take();
      expect(new Set([a, b, c]).size).to.equal(3);
      expect([a, b, c].every((u) => u >= 100 && u < 103)).to.equal(true);
      expect(() => users.take()).to.throw(/No free runner user id/);
      users.give(b);
      expect(users.take()).to.equal(b);
    });

    it('never the id another live service on this host holds; an id whose service is gone is taken over', () => {
      const lock = (uid: number, pid: number) => writeFileSync(path.join(lockDir, String(uid)), String(pid));
      const first = new RunnerUsers({ base: 200, count: 2, lockDir });
      first.take(); // creates the folder
      first.give(200);
      first.give(201);
      // Another service (a live process: this test's parent) holds 200; a killed one left 201.
      lock(200, process.ppid);
      lock(201, 2 ** 22 + 17);
      const users = new RunnerUsers({ base: 200, count: 2, lockDir });
      expect(users.take()).to.equal(201);
      expect(readFileSync(path.join(lockDir, '201'), 'utf8')).to.equal(String(process.pid));
      expect(() => users.take()).to.throw(/No free runner user id/);
      users.give(201);
      expect(existsSync(path.join(lockDir, '201'))).to.equal(false);
    });

    it('refuses a lock folder that others may write, or a symbolic link', () => {
      mkdirSync(lockDir, { mode: 0o777 });
      chmodSync(lockDir, 0o777);
      expect(() => new RunnerUsers({ lockDir }).take()).to.throw(/no one else may write/);
      rmSync(lockDir, { recursive: true });
      const elsewhere = `${lockDir}-target`;
      mkdirSync(elsewhere, { mode: 0o700 });
      symlinkSync(elsewhere, lockDir);
      expect(() => new RunnerUsers({ lockDir }).take()).to.throw(/no one else may write/);
    });
  });

  describe("the watchdog's view of a contained program", () => {
    it("sees bubblewrap, its namespace's first process and the program; reads the program's user; kills the whole tree", async function () {
      if (!hasBwrap) this.skip();
      const isolation = await probeIsolation({ mode: 'strict' });
      const uid = isolation.users?.take();
      const { file, args } = launchCommand(isolation.plan, { readOnly: [], maxProcesses: 16, switchTo: uid }, [
        '/usr/bin/sleep',
        '30',
      ]);
      const child = spawn(file, args, { env: {}, stdio: 'ignore' });
      try {
        let tree = await sampleTree(child.pid!);
        for (let i = 0; i < 50 && tree.pids.length < 3; i++) {
          await new Promise((r) => setTimeout(r, 20));
          tree = await sampleTree(child.pid!);
        }
        expect(tree.pids).to.have.length(3);
        expect(tree.pids[0]).to.equal(child.pid);
        expect(tree.rssBytes).to.be.greaterThan(0);
        const sleeper = tree.pids.at(-1)!;
        // prlimit and setpriv exec into the program: the user changes once setpriv has run.
        let seen = await uidOf(sleeper);
        for (let i = 0; i < 50 && uid !== undefined && seen !== uid; i++) {
          await new Promise((r) => setTimeout(r, 20));
          seen = await uidOf(sleeper);
        }
        if (uid !== undefined) expect(seen).to.equal(uid);
        const exited = new Promise((r) => child.once('exit', r));
        killTree(tree.pids);
        await exited;
        // A killed process lingers until it is reaped.
        let gone = await uidOf(sleeper);
        for (let i = 0; i < 100 && gone !== undefined; i++) {
          await new Promise((r) => setTimeout(r, 20));
          gone = await uidOf(sleeper);
        }
        expect(gone).to.equal(undefined);
      } finally {
        child.kill('SIGKILL');
        isolation.users?.give(uid);
      }
    });
  });
});
