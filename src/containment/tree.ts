/**
 * The processes of a contained program, seen from outside (README.md "Limits"). With a PID
 * namespace, the child the service started is bubblewrap, whose own child is the namespace's
 * first process, whose child runs the program: limits that measure only `child.pid` would
 * measure bubblewrap. So the watchdog walks the whole tree below the child, through each
 * thread's `children` file in /proc (Linux), and measures and kills every process in it.
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

const PAGE = 4096;
/** The walk stops here: a tree this large is over any limit already. */
const MAX_WALK = 4096;

async function childrenOf(pid: number): Promise<number[]> {
  let tasks: string[];
  try {
    tasks = await readdir(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of tasks) {
    const text = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const part of text.split(' ')) if (part.trim() !== '') out.push(Number(part));
  }
  return out;
}

/** `pid` and every process below it (breadth first; `pid` first). */
export async function processTree(pid: number): Promise<number[]> {
  const seen = [pid];
  for (let i = 0; i < seen.length && seen.length < MAX_WALK; i++) {
    for (const c of await childrenOf(seen[i]!)) if (!seen.includes(c)) seen.push(c);
  }
  return seen;
}

export interface TreeSample {
  pids: number[];
  /** Resident memory of all of them together (shared pages counted once per process). */
  rssBytes: number;
}

/** The tree below `pid` and its resident memory; empty when `pid` is gone. */
export async function sampleTree(pid: number): Promise<TreeSample> {
  const pids = await processTree(pid);
  let rssBytes = 0;
  const alive: number[] = [];
  for (const p of pids) {
    const statm = await readFile(`/proc/${p}/statm`, 'utf8').catch(() => undefined);
    if (statm === undefined) continue;
    alive.push(p);
    rssBytes += Number(statm.split(' ')[1]) * PAGE;
  }
  return { pids: alive, rssBytes };
}

/**
 * Resident memory of known processes (their statm; no walk of the tree): the cheap sample of a
 * tree at rest, between full walks. `pids` are the ones still there.
 */
export async function sampleKnown(known: readonly number[]): Promise<TreeSample> {
  let rssBytes = 0;
  const pids: number[] = [];
  for (const p of known) {
    const statm = await readFile(`/proc/${p}/statm`, 'utf8').catch(() => undefined);
    if (statm === undefined) continue;
    pids.push(p);
    rssBytes += Number(statm.split(' ')[1]) * PAGE;
  }
  return { pids, rssBytes };
}

/** The real user id of a process (from /proc), or undefined when it is gone. */
export async function uidOf(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const m = status && /^Uid:\s+(\d+)/m.exec(status);
  return m ? Number(m[1]) : undefined;
}

/** SIGKILL to every process of the tree, the deepest first (the namespace's first process last). */
export function killTree(pids: readonly number[]): void {
  for (const p of [...pids].reverse()) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * Resident memory of `pids` together (Linux statm); gone processes count nothing. Read
 * synchronously: a few tiny reads of procfs cost microseconds, less than a trip through the
 * thread pool that the store's queries use too.
 */
export function residentBytes(pids: readonly number[]): number {
  let pages = 0;
  for (const p of pids) {
    try {
      pages += Number(readFileSync(`/proc/${p}/statm`, 'utf8').split(' ')[1]);
    } catch {
      // gone
    }
  }
  return pages * PAGE;
}

/**
 * Proportional set size of `pids` together (Linux smaps_rollup): each shared page counts once
 * across the processes that map it, divided between them, so a tree of many processes that map
 * the same program (Chromium's browser, GPU, utility and renderer processes) is not counted
 * once per process as resident memory would. Gone processes count nothing.
 */
export async function pssBytes(pids: readonly number[]): Promise<number> {
  let kb = 0;
  for (const p of pids) {
    const rollup = await readFile(`/proc/${p}/smaps_rollup`, 'utf8').catch(() => '');
    const m = /^Pss:\s+(\d+) kB/m.exec(rollup);
    if (m) kb += Number(m[1]);
  }
  return kb * 1024;
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on every Linux ABI Node runs on). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time of `pids` together, in milliseconds: each process's user and system time and that of
 * its children it has waited for (so a process that has exited still counts, through its parent).
 * Gone processes count nothing.
 */
export async function cpuMs(pids: readonly number[]): Promise<number> {
  let ticks = 0;
  for (const p of pids) {
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime are fields 14–17, i.e. 11–14 after the name and state.
    for (let i = 11; i <= 14; i++) ticks += Number(fields[i] ?? 0) || 0;
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}
