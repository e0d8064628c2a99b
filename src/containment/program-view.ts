/**
 * Where a contained program's own files appear in its view with bubblewrap (README.md
 * "Operating-system layer"): Node's binary, the runner program, the runners' shared module and
 * the packages it loads are each bound alone, read-only, under one neutral folder, so the view
 * shows nothing of the folders the service is installed in (the checkout, a home folder holding
 * Node) and a program cannot learn their names.
 */
import path from 'node:path';
import { PACKAGE_ROOT } from '../kernel/package-files.js';
import type { Bind } from './launch.js';

/** The neutral folder of the programs' own files in every contained view. */
export const PROGRAM_ROOT = '/opt/switchyard';

/** Paths the view already has with what is below them (launch.ts): no folder is made for them. */
const IN_VIEW = ['/usr', '/proc', '/sys', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Mounts of the view whose content is made by the program's binds: only they are skipped. */
const MOUNTS = ['/dev', '/tmp'];

/**
 * The in-view path of a host file or folder that a contained program reads: the running Node at
 * `/opt/switchyard/node`, a file of the package at its own path below `/opt/switchyard`
 * (`src/…`, `node_modules/…`), anything else (a package hoisted above this one) at
 * `/opt/switchyard/ext/<name>`.
 */
export function programPath(host: string): string {
  if (host === process.execPath) return `${PROGRAM_ROOT}/node`;
  const rel = path.relative(PACKAGE_ROOT, host);
  if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel))
    return path.posix.join(PROGRAM_ROOT, ...rel.split(path.sep));
  return path.posix.join(PROGRAM_ROOT, 'ext', path.basename(host));
}

/** Each of `hosts` bound read-only, alone, at its programPath. */
export function programBinds(hosts: readonly string[]): Bind[] {
  return hosts.map((source) => ({ source, target: programPath(source) }));
}

/**
 * The folders above `paths` (each path's ancestors, parents first), except those the view
 * already has: bubblewrap would make them with mode 0700, which a program switched to an
 * unprivileged user cannot pass (ContainSpec.dirs).
 */
export function parentDirs(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    const parts = path.resolve(p).split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      if (MOUNTS.includes(dir) || IN_VIEW.some((v) => dir === v || dir.startsWith(`${v}/`))) continue;
      out.add(dir);
    }
  }
  return [...out].sort((a, b) => a.split('/').length - b.split('/').length);
}
