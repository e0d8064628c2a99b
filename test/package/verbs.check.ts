/**
 * Every CLI verb of the installed package ran in this package check: the verbs come from the
 * installed `switchyard --help` (and each group's help), the calls from SWITCHYARD_CLI_VERBS
 * (test/helpers/process.ts and installed.check.ts append every call's arguments). A new verb
 * without a test that runs it fails here. Runs last (test/package/mocharc.cjs).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';

const CLI = process.env.SWITCHYARD_CLI;
const VERBS_LOG = process.env.SWITCHYARD_CLI_VERBS;

/** The command names of a help text's "Commands:" section, without `help`. */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1] ?? '';
  return [...section.matchAll(/^ {2}([a-z][\w:-]*)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
}

function help(args: string[]): string {
  return execFileSync(CLI!, [...args, '--help'], { encoding: 'utf8' });
}

describe('the installed package: every CLI verb ran', function () {
  this.timeout(60_000);

  it('each verb of `switchyard --help` (and of each group) was called at least once', () => {
    expect(CLI, 'SWITCHYARD_CLI').to.be.a('string');
    expect(VERBS_LOG && existsSync(VERBS_LOG), 'SWITCHYARD_CLI_VERBS names the calls log').to.equal(true);
    const verbs: string[] = [];
    for (const top of commandsOf(help([]))) {
      const subs = commandsOf(help([top]));
      if (subs.length === 0) verbs.push(top);
      else for (const sub of subs) verbs.push(`${top} ${sub}`);
    }
    expect(verbs.length).to.be.greaterThan(20);
    const called = new Set<string>();
    for (const line of readFileSync(VERBS_LOG!, 'utf8').split('\n').filter(Boolean)) {
      const args = JSON.parse(line) as string[];
      called.add(args[0]!);
      if (args[1]) called.add(`${args[0]} ${args[1]}`);
    }
    const missing = verbs.filter((v) => !called.has(v));
    expect(missing, `verbs no test ran against the installed package`).to.deep.equal([]);
  });
});
