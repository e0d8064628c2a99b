/**
 * The runners' protocol constants have one source (src/containment/runner-common.cjs PROTOCOL,
 * MESSAGE, EXIT): a runner process reads the same values the service's side imports, the code
 * runner's parent accepts what the shared channel sends, and no runner or parent writes a
 * version of its own.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { RUNNER_COMMON_PATH, RUNNER_EXIT, RUNNER_MESSAGE, RUNNER_PROTOCOL } from '../../../src/containment/index.js';
import { parseChildMessage, PROTOCOL_VERSION } from '../../../src/engine/sandbox/protocol.js';

/** The constants as a runner sees them: the shared module loaded by plain Node in a process of its own. */
function runnerSide(): { PROTOCOL: unknown; MESSAGE: unknown; EXIT: unknown } {
  const code = `const c = require(${JSON.stringify(RUNNER_COMMON_PATH)});
    process.stdout.write(JSON.stringify({ PROTOCOL: c.PROTOCOL, MESSAGE: c.MESSAGE, EXIT: c.EXIT }));`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', env: {} });
  expect(r.status, r.stderr).to.equal(0);
  return JSON.parse(r.stdout) as { PROTOCOL: unknown; MESSAGE: unknown; EXIT: unknown };
}

describe('containment: the runners’ protocol constants', function () {
  this.timeout(20_000);

  it('a runner process reads the versions, message types and exit codes the service imports', () => {
    const seen = runnerSide();
    expect(seen.PROTOCOL).to.deep.equal({ ...RUNNER_PROTOCOL });
    expect(seen.MESSAGE).to.deep.equal({ ...RUNNER_MESSAGE });
    expect(seen.EXIT).to.deep.equal({ ...RUNNER_EXIT });
    expect(PROTOCOL_VERSION).to.equal(RUNNER_PROTOCOL.code);
    expect(Object.isFrozen(RUNNER_PROTOCOL) && Object.isFrozen(RUNNER_MESSAGE)).to.equal(true);
  });

  it('the code runner’s parent accepts the ready message the shared channel sends, and no other version', async () => {
    const code = `const common = require(${JSON.stringify(RUNNER_COMMON_PATH)});
      common.channel(common.PROTOCOL.code, {}, () => undefined).ready();`;
    const child = spawn(process.execPath, ['-e', code, 'runner.cjs', '{}'], {
      env: {},
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    try {
      const msg = await new Promise<unknown>((resolve) => child.once('message', resolve));
      expect(msg).to.deep.equal({ v: RUNNER_PROTOCOL.code, t: RUNNER_MESSAGE.ready });
      expect(parseChildMessage(msg)).to.deep.equal({ t: 'ready' });
      expect(parseChildMessage({ ...(msg as object), v: RUNNER_PROTOCOL.code + 1 })).to.equal(undefined);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('no runner or parent writes a protocol version of its own', () => {
    const files = [
      'src/engine/sandbox/runner.cjs',
      'src/engine/sandbox/protocol.ts',
      'src/browser/script-runner.cjs',
      'src/browser/scripts.ts',
      'src/browser/box-server.cjs',
      'src/browser/box.ts',
    ];
    for (const f of files) {
      const text = readFileSync(new URL(`../../../${f}`, import.meta.url), 'utf8');
      expect(text, f).to.not.match(/PROTOCOL(_VERSION)?\s*=\s*\d/);
      expect(text, f).to.match(/PROTOCOL\.(code|script|box)\b/);
    }
  });
});
