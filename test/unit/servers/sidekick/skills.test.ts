// Agent skills (spec section 8 `skills`): the shipped guides in skills/ parse, cover every
// embedded server and name existing tools; they are served by default.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { toolServers } from '../../../../generated/tools/servers.js';
import { EMBEDDED_PATHS } from '../../../../src/gateway/index.js';
import {
  createMemorySource,
  createSidekickServer,
  DEFAULT_SKILLS_DIR,
  describedServerTools,
  loadSkillDir,
  parseSkill,
  type DetailsResult,
  type DiscoverResult,
} from '../../../../src/servers/sidekick/index.js';
import { context } from './fixtures.js';

describe('svc-sidekick skills', () => {
  it('every shipped skill parses, is unique, and names an existing server and tools', async () => {
    const skills = await loadSkillDir(DEFAULT_SKILLS_DIR);
    expect(skills.length).to.be.at.least(EMBEDDED_PATHS.length);
    expect(new Set(skills.map((s) => s.name)).size).to.equal(skills.length);
    for (const s of skills) {
      const server = toolServers.find((x) => x.path === s.server);
      expect(server, `${s.name}: server ${s.server}`).to.not.equal(undefined);
      for (const t of s.tools)
        expect(
          server!.tools.map((x) => x.name),
          `${s.name}: tool ${t}`,
        ).to.include(t);
      expect(s.description, s.name).to.not.equal('');
      expect(s.content, s.name).to.match(/^# /);
    }
  });

  it('ships a guide for every embedded server', async () => {
    const servers = new Set((await loadSkillDir(DEFAULT_SKILLS_DIR)).map((s) => s.server));
    for (const p of EMBEDDED_PATHS) expect(servers.has(p), p).to.equal(true);
  });

  it('the guides carry the rules agents need (spec sections 8, 9, 12)', async () => {
    const text = (await loadSkillDir(DEFAULT_SKILLS_DIR)).map((s) => s.content).join('\n');
    expect(text).to.match(/PCID/);
    expect(text).to.match(/every 3 to\s+5 seconds/);
    expect(text).to.match(/JSON of an\s+object/);
    expect(text).to.match(/capability_details/);
  });

  it('are served by default: hasSkill, skills[] and capability_details skill', async () => {
    const server = createSidekickServer(createMemorySource({ tools: describedServerTools() }));
    const found = (
      await server.callTool(context(), 'capabilities_discover', { request: 'poll the browser task until it completes' })
    ).structuredContent as DiscoverResult;
    expect(found.tools.find((t) => t.serverName === 'browser-automation')?.hasSkill).to.equal(true);
    expect(found.skills.map((s) => s.name)).to.include('browser-tasks');
    const d = (await server.callTool(context(), 'capability_details', { items: ['browser-automation_playwright_run'] }))
      .structuredContent as DetailsResult;
    expect(d.items[0]!.skill).to.contain('# Playwright scripts').and.to.contain('# Browser tasks');
  });

  it('parseSkill rejects incomplete front matter', () => {
    expect(() => parseSkill('# no front matter', 'a.md')).to.throw(/a.md: missing YAML front matter/);
    expect(() => parseSkill('---\nname: x\n---\n# X', 'b.md')).to.throw(/name and server/);
    expect(() => parseSkill('---\nname: x\nserver: y\ntools: nope\n---\n# X', 'c.md')).to.throw(/tools must be a list/);
    expect(parseSkill('---\nname: x\nserver: y\ndescription: d\n---\n# Title\n\nbody')).to.deep.equal({
      name: 'x',
      server: 'y',
      tools: [],
      title: 'Title',
      description: 'd',
      content: '# Title\n\nbody',
    });
  });

  it('reads nested folders, skips README.md, and treats a missing folder as no skills', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'skills-'));
    try {
      await writeFile(path.join(dir, 'README.md'), '# not a skill');
      await writeFile(path.join(dir, 's.md'), '---\nname: s\nserver: slack\n---\n# S');
      expect((await loadSkillDir(dir)).map((s) => s.name)).to.deep.equal(['s']);
      expect(await loadSkillDir(path.join(dir, 'missing'))).to.deep.equal([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
