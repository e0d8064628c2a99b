/**
 * Browser tests need Debian's Chromium (/usr/bin/chromium, or BROWSER_EXECUTABLE). On CI it is
 * mandatory (scripts/ensure-services.sh installs it); elsewhere a missing Chromium skips the
 * suite with a note saying how to get it. The containment tests also look at the processes the
 * service started, from outside, through /proc (Linux).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { processTree, uidOf } from '../../src/containment/index.js';

export const CHROMIUM = process.env.BROWSER_EXECUTABLE || '/usr/bin/chromium';

/** Call first in a browser suite's `before` hook. */
export function requireChromium(ctx: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI === 'true') throw new Error(`Chromium is required on CI but ${CHROMIUM} does not exist`);
  process.stderr.write(
    `\nNOTE: ${CHROMIUM} is missing; the browser automation tests are skipped (apt-get install -y chromium, or scripts/ensure-services.sh).\n`,
  );
  ctx.skip();
}

function exeOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` runs this Node: compared by file identity, as a contained process's own view
 * names its binary by the neutral path it is bound at (src/containment programPath).
 */
function runsThisNode(pid: number): boolean {
  try {
    const exe = statSync(`/proc/${pid}/exe`);
    const node = statSync(process.execPath);
    return exe.dev === node.dev && exe.ino === node.ino;
  } catch {
    return false;
  }
}

/** The environment a process was started with (names only). */
export function environOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1')
      .split('\0')
      .filter(Boolean)
      .map((e) => e.split('=')[0]!);
  } catch {
    return [];
  }
}

/** Script runner processes below this (test) process: the Node processes running script-runner.cjs. */
export async function scriptRunners(): Promise<number[]> {
  const out: number[] = [];
  for (const pid of await processTree(process.pid)) {
    if (pid === process.pid || !runsThisNode(pid)) continue;
    const cmd = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      } catch {
        return '';
      }
    })();
    if (cmd.includes('script-runner.cjs')) out.push(pid);
  }
  return out;
}

/** Chromium's own processes below `pid` (the launch script, bubblewrap and setpriv are left out). */
export async function chromiumProcesses(pid: number): Promise<number[]> {
  const tree = await processTree(pid);
  return tree.filter((p) => /chrom/.test(exeOf(p) ?? ''));
}

/** The distinct user ids of `pids`. */
export async function usersOf(pids: readonly number[]): Promise<number[]> {
  const uids = new Set<number>();
  for (const p of pids) {
    const uid = await uidOf(p);
    if (uid !== undefined) uids.add(uid);
  }
  return [...uids];
}

/**
 * Folders of the host that a contained view must not hold: home folders, PostgreSQL's socket
 * folder, the accounts. Node itself may be installed under a home folder (a Node fetched into
 * ~/.cache by scripts/supported-node.sh): then only the folders on its way are there.
 */
export function hostFoldersInView(view: string): string[] {
  const found: string[] = [];
  for (const dir of ['/root', '/home', '/var/run/postgresql', '/etc/passwd', '/etc/shadow']) {
    if (!existsSync(`${view}${dir}`)) continue;
    const onTheWay = process.execPath.startsWith(`${dir}/`)
      ? process.execPath.slice(dir.length + 1).split('/')[0]
      : undefined;
    const listing = onTheWay ? readdirSync(`${view}${dir}`) : undefined;
    if (!listing || listing.length !== 1 || listing[0] !== onTheWay) found.push(dir);
  }
  return found;
}
