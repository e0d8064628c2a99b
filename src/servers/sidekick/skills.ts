/**
 * Agent skills (spec section 8 `skills`, type `agentSkill`): Markdown guides attached to a
 * server or to some of its tools. They ship as files under `skills/<server-path>/<name>.md`
 * at the repository root, each starting with YAML front matter:
 *
 *   ---
 *   name: browser-task-polling        # unique, returned in skills[].name
 *   server: browser-automation        # server path the skill belongs to
 *   tools: [browser-automation_operator_run]   # optional; omitted = the whole server
 *   description: One line shown to ranking and to readers.
 *   ---
 *
 * Skills are the same for every organisation, so they are loaded and indexed once per server.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { TermIndex, type FieldSpec } from './search.js';

export interface SkillDoc {
  name: string;
  /** Server path. */
  server: string;
  /** Tools the skill documents; empty when it documents the whole server. */
  tools: string[];
  title: string;
  description: string;
  /** The Markdown body (front matter removed). */
  content: string;
}

/** `skills/` at the repository root (this file is src/servers/sidekick/skills.ts). */
export const DEFAULT_SKILLS_DIR = fileURLToPath(new URL('../../../skills/', import.meta.url));

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/;

/** Parses one skill file; throws with the file name when the front matter is incomplete. */
export function parseSkill(source: string, file = 'skill'): SkillDoc {
  const m = FRONT_MATTER.exec(source);
  if (!m) throw new Error(`${file}: missing YAML front matter`);
  const meta = (parseYaml(m[1]!) ?? {}) as Record<string, unknown>;
  const str = (k: string): string => (typeof meta[k] === 'string' ? (meta[k] as string).trim() : '');
  const name = str('name');
  const server = str('server');
  if (!name || !server) throw new Error(`${file}: front matter needs name and server`);
  const tools = meta.tools === undefined ? [] : meta.tools;
  if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string' && t.length > 0)) {
    throw new Error(`${file}: tools must be a list of tool names`);
  }
  const content = source.slice(m[0].length).trim();
  const heading = /^#\s+(.+)$/m.exec(content);
  return {
    name,
    server,
    tools: tools as string[],
    title: heading?.[1]?.trim() ?? name,
    description: str('description'),
    content,
  };
}

/** Reads every `*.md` below `dir` (README.md excepted). A missing folder yields no skills. */
export async function loadSkillDir(dir: string): Promise<SkillDoc[]> {
  let files: string[];
  try {
    files = (await readdir(dir, { recursive: true })).filter(
      (f) => f.endsWith('.md') && path.basename(f) !== 'README.md',
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  files.sort();
  return Promise.all(files.map(async (f) => parseSkill(await readFile(path.join(dir, f), 'utf8'), f)));
}

const SKILL_FIELDS: Record<string, FieldSpec> = {
  name: { boost: 2, quality: 1 },
  title: { boost: 2, quality: 1 },
  description: { boost: 1.5, quality: 0.9 },
  scope: { boost: 1.5, quality: 0.9 },
  content: { boost: 0.3, quality: 0.5 },
};

/** The skills of an installation, indexed, with lookups by server and tool. */
export class SkillLibrary {
  readonly index: TermIndex<{ id: number; skill: SkillDoc }>;
  private readonly byServer = new Map<string, SkillDoc[]>();

  constructor(readonly skills: readonly SkillDoc[]) {
    this.index = new TermIndex(SKILL_FIELDS, (d, f) => {
      const s = d.skill;
      if (f === 'scope') return `${s.server} ${s.tools.join(' ')}`;
      return f === 'name' || f === 'title' || f === 'description' || f === 'content' ? s[f] : '';
    });
    skills.forEach((skill, id) => {
      this.index.add({ id, skill });
      this.byServer.set(skill.server, [...(this.byServer.get(skill.server) ?? []), skill]);
    });
  }

  /** Skills for a tool: those naming it first, then the server-wide ones. */
  forTool(server: string, tool: string): SkillDoc[] {
    const all = this.byServer.get(server) ?? [];
    return [...all.filter((s) => s.tools.includes(tool)), ...all.filter((s) => s.tools.length === 0)];
  }

  hasSkill(server: string, tool: string): boolean {
    return (this.byServer.get(server) ?? []).some((s) => s.tools.length === 0 || s.tools.includes(tool));
  }
}
