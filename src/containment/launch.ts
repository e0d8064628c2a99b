/**
 * The command line of a contained process (README.md "Operating-system layer"): the program
 * wrapped in bubblewrap (its own PID, IPC, UTS, cgroup and network namespaces; a read-only view
 * of only the paths it needs, a private tmpfs), in prlimit (its process count) and, for programs that cannot drop privileges themselves, in setpriv (an
 * unprivileged user, no capabilities, no new privileges). What is used depends on what the
 * machine allows (probe.ts decides once, at start).
 */
import { lstatSync, readlinkSync } from 'node:fs';

/** Which tools the machine has and may use (probe.ts). */
export interface LaunchPlan {
  /** bubblewrap's path when the operating-system layer is in force. */
  bwrap: string | undefined;
  /** util-linux prlimit: RLIMIT_NPROC, which bounds the processes and threads of the runner's user. */
  prlimit: string | undefined;
  /** util-linux setpriv: a user change for programs that cannot make it themselves, and no new privileges for all. */
  setpriv: string | undefined;
  /** coreutils env: removes the PWD that bubblewrap sets, so the program's environment is what its caller gave. */
  env: string | undefined;
}

export interface Bind {
  source: string;
  target: string;
  writable?: boolean;
}

export interface ContainSpec {
  /** Files and folders bound read-only at their own paths (missing ones are skipped). */
  readOnly: readonly string[];
  /** Other binds: a folder or socket at a path of its own, or a folder the program may write. */
  binds?: readonly Bind[];
  /** RLIMIT_NPROC of the program's user: processes and threads together. */
  maxProcesses: number;
  /**
   * The unprivileged user the program is switched to with setpriv (a program that switches
   * itself, such as the code runners, gets none here).
   */
  switchTo?: number | undefined;
  /** Working folder inside the view (default `/tmp`, the private tmpfs). */
  chdir?: string;
  /**
   * Folders made in the view (mode 0755) before the binds: bubblewrap makes the missing parents
   * of a bind with mode 0700, which a program switched to an unprivileged user cannot pass, so
   * the parents of what such a program reads after the switch are listed here.
   */
  dirs?: readonly string[];
  /**
   * Size of the private /tmp (default 64 MiB). Its pages are the host's memory but no process's
   * resident memory, so the watchdog would not see them: the size is its only bound.
   */
  tmpBytes?: number;
  /**
   * Size of a private /dev/shm (a tmpfs; without it the view's /dev/shm is a folder of the /dev
   * bubblewrap makes, with no size of its own). Programs that share memory through files there
   * (Chromium) get it bounded like /tmp.
   */
  shmBytes?: number;
}

const DEFAULT_TMP_BYTES = 64 * 1024 * 1024;

/** Top-level system folders: on a merged-/usr system most are symlinks into /usr. */
const SYSTEM = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** `--symlink` for the system folders that are links, `--ro-bind` for the others; /usr always. */
function systemView(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of SYSTEM) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    } catch {
      // not on this system
    }
  }
  return args;
}

let system: string[] | undefined;

/** bubblewrap's arguments for `spec`, up to and including the `--` before the program. */
export function bwrapArgs(spec: ContainSpec): string[] {
  system ??= systemView();
  const args = [
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    // No contained program has a network of its own: not even loopback of the host.
    '--unshare-net',
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    ...system,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...(spec.shmBytes !== undefined ? ['--perms', '1777', '--size', String(spec.shmBytes), '--tmpfs', '/dev/shm'] : []),
    // Writable by the unprivileged user the program runs as (sticky, like a host's /tmp).
    '--perms',
    '1777',
    '--size',
    String(spec.tmpBytes ?? DEFAULT_TMP_BYTES),
    '--tmpfs',
    '/tmp',
  ];
  for (const d of spec.dirs ?? []) args.push('--dir', d);
  for (const p of spec.readOnly) args.push('--ro-bind-try', p, p);
  for (const b of spec.binds ?? []) args.push(b.writable ? '--bind' : '--ro-bind', b.source, b.target);
  args.push('--chdir', spec.chdir ?? '/tmp', '--');
  return args;
}

/** The whole command: `{file, args}` for spawn(), with the program's own `argv` last. */
export function launchCommand(
  plan: LaunchPlan,
  spec: ContainSpec,
  argv: readonly string[],
): { file: string; args: string[] } {
  const inner: string[] = [];
  if (plan.bwrap && plan.env) inner.push(plan.env, '-u', 'PWD');
  if (plan.prlimit) inner.push(plan.prlimit, `--nproc=${spec.maxProcesses}:${spec.maxProcesses}`, '--');
  if (plan.setpriv && spec.switchTo !== undefined) {
    inner.push(
      plan.setpriv,
      `--reuid=${spec.switchTo}`,
      `--regid=${spec.switchTo}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
    );
  } else if (plan.setpriv) {
    // No user change here (the program makes it itself, or already runs unprivileged): still no
    // setuid binary can raise its privileges again.
    inner.push(plan.setpriv, '--no-new-privs', '--');
  }
  inner.push(...argv);
  if (!plan.bwrap) return { file: inner[0]!, args: inner.slice(1) };
  return { file: plan.bwrap, args: [...bwrapArgs(spec), ...inner] };
}
