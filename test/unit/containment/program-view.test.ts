/**
 * The neutral paths of contained programs' own files (src/containment/program-view.ts): nothing of
 * where the package or Node is installed shows in a contained view.
 */
import path from 'node:path';
import { expect } from 'chai';
import { parentDirs, programBinds, programPath, PROGRAM_ROOT } from '../../../src/containment/index.js';
import { PACKAGE_ROOT } from '../../../src/kernel/package-files.js';

describe('containment: programs at neutral paths', () => {
  it('puts Node at /opt/switchyard/node and a package file at its package path below /opt/switchyard', () => {
    expect(programPath(process.execPath)).to.equal('/opt/switchyard/node');
    expect(programPath(path.join(PACKAGE_ROOT, 'src', 'engine', 'sandbox', 'runner.cjs'))).to.equal(
      '/opt/switchyard/src/engine/sandbox/runner.cjs',
    );
    expect(programPath(path.join(PACKAGE_ROOT, 'node_modules', 'playwright-core'))).to.equal(
      '/opt/switchyard/node_modules/playwright-core',
    );
  });

  it('puts a file outside the package (a hoisted package) under ext/ by its name, never its host folders', () => {
    const outside = path.join(path.dirname(PACKAGE_ROOT), 'elsewhere', 'node_modules', 'isolated-vm');
    expect(programPath(outside)).to.equal('/opt/switchyard/ext/isolated-vm');
    expect(programPath('/root/.cache/x/node-v24/bin/node-copy')).to.equal('/opt/switchyard/ext/node-copy');
  });

  it('binds each host path alone, read-only, and every target is below the neutral root', () => {
    const hosts = [process.execPath, path.join(PACKAGE_ROOT, 'src', 'containment', 'runner-common.cjs')];
    const binds = programBinds(hosts);
    expect(binds.map((b) => b.source)).to.deep.equal(hosts);
    for (const b of binds) {
      expect(b.writable).to.equal(undefined);
      expect(b.target.startsWith(`${PROGRAM_ROOT}/`)).to.equal(true);
      expect(b.target).to.not.contain(PACKAGE_ROOT);
    }
  });

  it('parentDirs lists the folders above each path, parents first, except those the view already has', () => {
    expect(
      parentDirs(['/opt/node/bin/node', '/work/app/x.cjs', '/usr/lib/x', '/tmp/a/b', '/dev/shm/s/b', '/etc/fonts']),
    ).to.deep.equal([
      '/opt',
      '/work',
      '/etc',
      '/opt/node',
      '/work/app',
      '/tmp/a',
      '/dev/shm',
      '/opt/node/bin',
      '/dev/shm/s',
    ]);
  });
});
