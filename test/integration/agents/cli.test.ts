/** `switchyard agents …` and `switchyard channels …` against a real store, as a person at a terminal would use them. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { verifyChannelKey } from '../../../src/agents/channels.js';
import { openStore } from '../../../src/storage/db.js';
import { runCli } from '../../helpers/process.js';

describe('process: the switchyard CLI for agents and channels', function () {
  this.timeout(90_000);
  let dataDir: string;
  // The sqlite store in DATA_DIR, whatever the caller's environment names: verify() reads it.
  const cli = (...args: string[]) =>
    runCli(args, { DATA_DIR: dataDir, DATABASE_URL: '', PUBLIC_URL: 'http://127.0.0.1:8080' });
  const json = async (...args: string[]) => {
    const r = await cli(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
    return JSON.parse(r.stdout);
  };
  /** The channel-call lookup, on the CLI's own store. */
  const verify = async (triggerId: string, key: string) => {
    const db = openStore({ dataDir });
    try {
      return await verifyChannelKey(db, triggerId, key);
    } finally {
      await db.destroy();
    }
  };
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-cli-agents-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('agents create (YAML and JSON), list, show; invalid files are refused clearly with exit code 1', async () => {
    expect((await cli('init')).code).to.equal(0);
    const file = path.join(dataDir, 'agent.yaml');
    writeFileSync(
      file,
      YAML.stringify({
        name: 'Triage',
        instructions: 'Label each message.',
        servers: [{ server: 'svc-sidekick' }],
        introMessage: 'Hi!',
      }),
    );
    const agent = await json('agents', 'create', '--file', file);
    expect(agent.agentId).to.match(/^agt_[0-9a-f]{32}$/);
    expect(agent).to.deep.include({
      name: 'Triage',
      version: 1,
      introMessage: 'Hi!',
      servers: [{ server: 'svc-sidekick' }],
    });
    const jsonFile = path.join(dataDir, 'agent.json');
    writeFileSync(
      jsonFile,
      JSON.stringify({
        name: 'Extractor',
        instructions: 'Extract.',
        model: 'openai/gpt-4o-mini',
        outputSchema: { type: 'object' },
      }),
    );
    const second = await json('agents', 'create', '--file', jsonFile);
    // `init` seeded the demo agent first (bootstrap.json demo.agentId).
    const listedIds = (await json('agents', 'list')).items.map((a: { agentId: string }) => a.agentId);
    expect(listedIds).to.have.length(3);
    expect(listedIds.slice(1)).to.deep.equal([agent.agentId, second.agentId]);
    expect(await json('agents', 'show', agent.agentId)).to.deep.equal(agent);

    const refused = async (content: Record<string, unknown>, pattern: RegExp) => {
      writeFileSync(file, YAML.stringify(content));
      const r = await cli('agents', 'create', '--file', file);
      expect(r.code, r.stdout).to.equal(1);
      expect(r.stderr)
        .to.match(/^switchyard: invalid agent: /)
        .and.match(pattern);
    };
    await refused({ name: 'x', instructions: 'y', colour: 'blue' }, /unknown field "colour"/);
    // The CLI checks server paths itself (no gateway catalogue): embedded or registered in the store.
    await refused(
      { name: 'x', instructions: 'y', servers: [{ server: 'nowhere' }] },
      /servers\[0\]\.server: unknown server "nowhere"/,
    );
    // The other refusals (model, outputSchema, missing fields) share this path; validate.ts and the HTTP tests cover each.
  });

  it('channels create prints the key once; list and show never do; rotate-key swaps it at once; disable, delete', async () => {
    const [, agent] = (await json('agents', 'list')).items as { agentId: string }[];
    const created = await json(
      'channels',
      'create',
      '--agent',
      agent!.agentId,
      '--name',
      'Widget',
      '--format',
      'markdown',
    );
    expect(created.triggerId).to.match(/^chn_[0-9a-f]{32}$/);
    expect(created).to.deep.include({
      agentId: agent!.agentId,
      name: 'Widget',
      outputFormat: 'markdown',
      enabled: true,
      keyHint: created.apiKey.slice(-4),
    });
    expect(created.apiKey).to.match(/^syc_/);
    expect(created.url).to.equal(`http://127.0.0.1:8080/ext/triggers/${created.triggerId}`);
    expect(created.note).to.contain('shown once');
    expect(await verify(created.triggerId, created.apiKey)).to.deep.include({ enabled: true });

    const listed = await cli('channels', 'list', '--agent', agent!.agentId);
    expect(JSON.parse(listed.stdout).items.map((c: { triggerId: string }) => c.triggerId)).to.deep.equal([
      created.triggerId,
    ]);
    expect(listed.stdout).to.not.include(created.apiKey);
    const shown = await cli('channels', 'show', created.triggerId);
    expect(shown.stdout).to.not.include(created.apiKey);
    expect(JSON.parse(shown.stdout)).to.deep.include({ triggerId: created.triggerId, keyHint: created.keyHint });

    const rotated = await json('channels', 'rotate-key', created.triggerId);
    expect(rotated).to.deep.include({ triggerId: created.triggerId, keyHint: rotated.apiKey.slice(-4) });
    expect(await verify(created.triggerId, created.apiKey), 'the old key').to.equal(undefined);
    expect(await verify(created.triggerId, rotated.apiKey), 'the new key').to.deep.include({
      keyHint: rotated.keyHint,
    });

    expect(await json('channels', 'disable', created.triggerId)).to.deep.include({ enabled: false });
    expect(await verify(created.triggerId, rotated.apiKey)).to.deep.include({ enabled: false });
    expect(await json('channels', 'enable', created.triggerId)).to.deep.include({ enabled: true });
    expect(await verify(created.triggerId, rotated.apiKey)).to.deep.include({ enabled: true });

    const badFormat = await cli('channels', 'create', '--agent', agent!.agentId, '--format', 'html');
    expect([badFormat.code, badFormat.stderr]).to.deep.equal([
      1,
      'switchyard: --format must be one of text, markdown, json\n',
    ]);

    expect(await json('channels', 'delete', created.triggerId)).to.deep.equal({
      triggerId: created.triggerId,
      deleted: true,
    });
    expect(await verify(created.triggerId, rotated.apiKey)).to.equal(undefined);
    const gone = await cli('channels', 'show', created.triggerId);
    expect([gone.code, gone.stderr]).to.deep.equal([1, 'switchyard: Channel not found\n']);
  });
});
