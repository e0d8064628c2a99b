/**
 * `npm start` and `npm run worker` build before they start (scripts/build.mjs), in the same
 * checkout: a build never takes a file from a process that runs. A package copy (src/,
 * generated/, skills/, the build script and manifests) is built and its service started from
 * `<copy>/dist/main.js`; a second build of the same sources leaves the running build's files as
 * they are (same inodes); after a source change, two builds later every file of the running
 * build is still there and the service still answers, and the entries run the new build; once
 * the first service has exited (and a minute has passed) the next build removes the old builds.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../helpers/server.js';
import { ROOT } from '../../helpers/process.js';

/** Every file under a folder with its inode and modification time. */
function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    if (file.includes(`${path.sep}live${path.sep}`)) continue;
    const st = statSync(file);
    out.set(path.relative(dir, file), `${st.ino}:${st.mtimeMs}`);
  }
  return out;
}

/** The build folder an entry of dist/ runs (`b-<hash>`; `.` when the entry is the bundle itself). */
const entryBuild = (dist: string, name: string): string =>
  /\.\/(b-[0-9a-f]+)\//.exec(readFileSync(path.join(dist, `${name}.js`), 'utf8'))?.[1] ?? '.';

describe('process: a build in the checkout never takes a file from a running process', function () {
  this.timeout(120_000);
  let copy: string;
  let dist: string;
  let server: ChildProcess | undefined;
  let dataDir: string;

  const build = () =>
    execFileSync(process.execPath, [path.join(copy, 'scripts/build.mjs')], {
      cwd: copy,
      stdio: ['ignore', 'ignore', 'inherit'],
    });

  before(() => {
    mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
    copy = mkdtempSync(path.join(ROOT, '.tmp', 'build-copy-'));
    for (const part of ['src', 'generated', 'skills', 'scripts/build.mjs', 'package.json', 'tsconfig.json'])
      cpSync(path.join(ROOT, part), path.join(copy, part), { recursive: true });
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
    dist = path.join(copy, 'dist');
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-build-'));
  });
  after(() => {
    server?.kill('SIGKILL');
    if (copy) rmSync(copy, { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const ready = async (base: string): Promise<number> => {
    try {
      return (await fetch(`${base}/readyz`)).status;
    } catch {
      return 0;
    }
  };

  it('leaves a running build as it is, through a build of the same sources and two of changed ones', async () => {
    build();
    const first = entryBuild(dist, 'main');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['--max-semi-space-size=2', path.join(dist, 'main.js')], {
      cwd: copy,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        PUBLIC_URL: base,
      },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => server!.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 30_000;
    while ((await ready(base)) !== 200) {
      expect(server.exitCode, 'the service exited before it was ready').to.equal(null);
      expect(Date.now() < deadline, 'ready within 30 s').to.equal(true);
      await new Promise((r) => setTimeout(r, 200));
    }
    const running = files(path.join(dist, first));
    expect(running.size).to.be.above(5);

    // `npm run worker` beside it: the same sources, nothing of the running build changes.
    build();
    expect(files(path.join(dist, first))).to.deep.equal(running);
    expect(entryBuild(dist, 'worker')).to.equal(first);
    expect(readdirSync(path.join(dist, first, 'live'))).to.include(String(server.pid));

    // A source change, built twice: the running build keeps every file; the entries run the new one.
    const changed = path.join(copy, 'src/main.ts');
    writeFileSync(changed, `${readFileSync(changed, 'utf8')}\n// changed 1\n`);
    build();
    writeFileSync(changed, `${readFileSync(changed, 'utf8')}\n// changed 2\n`);
    build();
    const now = entryBuild(dist, 'main');
    expect(now).to.not.equal(first);
    expect(entryBuild(dist, 'cli')).to.equal(now);
    expect(files(path.join(dist, first))).to.deep.equal(running);
    expect(await ready(base)).to.equal(200);

    // Once its process is gone and a minute has passed (the folders' times set back), the next
    // build removes the old build and the one between; the current one stays.
    server.kill('SIGTERM');
    expect(await exited).to.equal(0);
    server = undefined;
    const past = new Date(Date.now() - 120_000);
    for (const name of readdirSync(dist)) if (name.startsWith('b-')) utimesSync(path.join(dist, name), past, past);
    build();
    expect(readdirSync(dist).filter((n) => n.startsWith('b-'))).to.deep.equal([now]);
    expect(existsSync(path.join(dist, now, 'main.js'))).to.equal(true);
  });
});
