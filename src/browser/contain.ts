/**
 * How an organisation's browser is contained (src/browser/README.md "Pool"), through
 * src/containment. The browser is a box: one process, src/browser/box-server.cjs, that runs
 * playwright-core's browser server with Chromium as its child, so that everything the Playwright
 * server does for a client (files it writes, requests it makes, programs it starts) happens in
 * the box, not in the service process. What the box is depends on the isolation level:
 * - operating-system layer in force (`namespaces`): bubblewrap with no network of its own (its
 *   own loopback only; the guarded proxies are reached through their Unix sockets, bound
 *   read-only), its own PID, IPC and UTS namespaces, a read-only view of the system (/usr and the
 *   fonts and Chromium settings of /etc), Node, the box program and playwright-core, without the
 *   service's files, its data folder or any home folder; the managed policy of src/browser/urls.ts
 *   at /etc/chromium/policies/managed; a private /tmp (profile, downloads, temporary files) and
 *   /dev/shm, tmpfs with a size (`diskBytes`); one host folder of its own, bound writable, where
 *   the box makes the Unix socket the Playwright server listens on;
 * - without it, when the service runs as root: the same program under an unprivileged user of
 *   its own, in a private folder, on the host's network and file system view;
 * - otherwise under the service's own user, in a private folder.
 * Either way the box gets a user id of its own (src/containment RunnerUsers) from the supervisor
 * that starts it (src/browser/box.ts), given back once its process has exited.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../config/logger.js';
import {
  parentDirs,
  programBinds,
  programPath,
  RUNNER_COMMON_PATH,
  runnerOptionsArg,
  type ContainSpec,
  type Isolation,
} from '../containment/index.js';
import { chromiumPolicy } from './urls.js';

const BOX_SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'box-server.cjs');
const PLAYWRIGHT = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));
/**
 * The box's own program, bound alone at neutral paths in its view (src/containment
 * programPath): Node, the box server with the runners' shared module beside it as in the
 * package, and playwright-core.
 */
const PROGRAM = [process.execPath, BOX_SERVER, RUNNER_COMMON_PATH, PLAYWRIGHT];
/** Where Debian's Chromium reads its managed policies. */
const POLICY_DIR = '/etc/chromium/policies/managed';
/** Where the box's own host folder (its socket) and the proxies' socket folder appear in its view. */
const BOX_RUN = '/run/box';
const PROXY_RUN = '/run/proxy';
/** The Playwright server's socket, in the box's own folder. */
const SOCKET_NAME = 'browser.sock';
/**
 * What Chromium reads of /etc: fonts, Debian's launcher settings (/usr/bin/chromium sources
 * /etc/chromium.d), the linker cache, the time zone and the public CA certificates. Missing ones
 * are skipped.
 */
const CHROMIUM_ETC = ['/etc/fonts', '/etc/chromium.d', '/etc/ld.so.cache', '/etc/localtime', '/etc/ssl/certs'];
/** RLIMIT_NPROC of a box's user: Node's threads, Chromium's processes and their threads (a few hundred with several pages). */
const BOX_MAX_THREADS = 4096;
/** /dev/shm of the box: Chromium keeps shared memory in /tmp (--disable-dev-shm-usage); this is for what else uses it. */
const SHM_BYTES = 64 * 1024 * 1024;
/**
 * The program to run and the folders it needs in the view: a browser installed outside /usr
 * (BROWSER_EXECUTABLE naming a Chrome or Playwright build) brings its own folder, and runs by
 * its real path (a link to it may not be in the view).
 */
function installation(executable: string): { program: string; folders: string[] } {
  try {
    const real = realpathSync(executable);
    return real.startsWith('/usr/')
      ? { program: executable, folders: [] }
      : { program: real, folders: [path.dirname(real)] };
  } catch {
    return { program: executable, folders: [] };
  }
}

/** A guarded proxy as the box reaches it: its loopback port on the host, and its Unix socket. */
export interface ProxySocket {
  port: number;
  socket: string;
}

/** What starts one box (src/containment's supervisor, src/browser/box.ts), and what to undo once it has exited. */
export interface BoxLaunch {
  /** The isolation the box is started with: without the users of a root service at the `service` level. */
  isolation: Isolation;
  /** Makes the box's folders for its user (undefined: the service's own) and answers its command line. */
  argv(uid: number | undefined): string[];
  /** What the box sees inside the operating-system layer. */
  view: ContainSpec;
  env: Record<string, string>;
  /** Whether the box has PID and mount namespaces of its own (bubblewrap): its tree starts with two bubblewrap processes. */
  namespaces: boolean;
  /** The Playwright server's Unix socket, as the service reaches it. */
  socket: string;
  /** After the box's process has exited, or when it could not start: its folder is removed. */
  release(): void;
}

export type ChromiumLevel = 'namespaces' | 'user' | 'service';

export interface BoxOptions {
  executable: string;
  isolation: Isolation;
  blockSchemes: boolean;
  /** Size of the private /tmp of a box (profile, downloads, temporary files): BROWSER_DISK_MB. */
  diskBytes: number;
  log: Logger;
}

export class ChromiumBox {
  readonly level: ChromiumLevel;
  private folders: string | undefined;
  private policies: string | undefined;

  constructor(private readonly opts: BoxOptions) {
    const { plan, users } = opts.isolation;
    this.level = plan.bwrap ? 'namespaces' : users && plan.setpriv ? 'user' : 'service';
  }

  /** What is in force for the browsers, for the startup log and README.md. */
  describe(): string {
    if (this.level === 'namespaces') {
      return `bubblewrap with no network of its own (the guarded proxy only, through its Unix socket); own PID, IPC and UTS namespaces; a read-only view of the system without the service's files, data folder or home folders; a URL blocklist for file:, chrome:, devtools:, view-source: and about: pages; profile, downloads and temporary files on a private tmpfs of ${Math.round(this.opts.diskBytes / 1048576)} MiB), an unprivileged user of its own; the Playwright server runs in the box`;
    }
    if (this.level === 'user')
      return "an unprivileged user of its own with a private folder, on the host's network (the operating-system layer is not in force); the Playwright server runs with it";
    return "the service's own user with a private folder, on the host's network (the operating-system layer is not in force); the Playwright server runs with it";
  }

  /**
   * Sets up one box: its folder, its view and its command line (made for its user when the
   * supervisor starts it). `proxies` are the guarded proxies Chromium may use, `chromiumArgs`
   * Chromium's flags (src/browser/pool.ts).
   */
  prepare({ proxies, chromiumArgs }: { proxies: readonly ProxySocket[]; chromiumArgs: readonly string[] }): BoxLaunch {
    const { isolation } = this.opts;
    const namespaces = this.level === 'namespaces';
    const dir = path.join(this.folderRoot(), randomBytes(8).toString('hex'));
    const run = path.join(dir, 'run');
    const home = namespaces ? '/tmp' : path.join(dir, 'home');
    const argv = (uid: number | undefined): string[] => {
      mkdirSync(dir, { mode: 0o711 });
      chmodSync(dir, 0o711);
      for (const d of namespaces ? [run] : [run, home]) {
        mkdirSync(d, { mode: 0o700 });
        if (uid !== undefined) chownSync(d, uid, uid);
      }
      const options = {
        playwright: namespaces ? programPath(PLAYWRIGHT) : PLAYWRIGHT,
        uid,
        executable: installation(this.opts.executable).program,
        args: chromiumArgs,
        socket: path.join(namespaces ? BOX_RUN : run, SOCKET_NAME),
        downloads: path.join(home, 'downloads'),
        // Without a network namespace of its own, Chromium reaches the proxies on the host's loopback.
        proxies: namespaces
          ? proxies.map((p) => ({ port: p.port, socket: path.join(PROXY_RUN, path.basename(p.socket)) }))
          : [],
      };
      return namespaces
        ? [programPath(process.execPath), '--no-warnings', programPath(BOX_SERVER), runnerOptionsArg(options)]
        : [process.execPath, '--no-warnings', BOX_SERVER, runnerOptionsArg(options)];
    };
    return {
      // The `service` level keeps the service's own user: no user id is taken for it.
      isolation: this.level === 'service' ? { ...isolation, users: undefined } : isolation,
      argv,
      view: this.view(run, proxies),
      env: { HOME: home, TMPDIR: home, PATH: '/usr/bin:/bin' },
      namespaces,
      socket: path.join(run, SOCKET_NAME),
      release: () => rmSync(dir, { recursive: true, force: true }),
    };
  }

  close(): void {
    if (this.folders) rmSync(this.folders, { recursive: true, force: true });
    this.folders = undefined;
    this.policies = undefined;
  }

  private view(run: string, proxies: readonly ProxySocket[]): ContainSpec {
    const readOnly = [...CHROMIUM_ETC, ...installation(this.opts.executable).folders];
    const program = programBinds(PROGRAM);
    const proxyDirs = [...new Set(proxies.map((p) => path.dirname(p.socket)))];
    if (proxyDirs.length > 1) throw new Error('the guarded proxies must keep their sockets in one folder');
    const binds = [
      ...program,
      { source: run, target: BOX_RUN, writable: true },
      ...proxyDirs.map((d) => ({ source: d, target: PROXY_RUN })),
      ...(this.level === 'namespaces' ? [{ source: this.policyFolder(), target: POLICY_DIR }] : []),
    ];
    return {
      readOnly,
      binds,
      // The box's Node reads playwright-core after switching users, so its folders must be passable.
      dirs: parentDirs([...readOnly, ...program.map((b) => b.target), BOX_RUN, PROXY_RUN, POLICY_DIR]),
      maxProcesses: BOX_MAX_THREADS,
      tmpBytes: this.opts.diskBytes,
      shmBytes: SHM_BYTES,
    };
  }

  /** The boxes' folders: a private folder (0711) that each box's user may pass, never list. */
  private folderRoot(): string {
    if (!this.folders) {
      this.folders = mkdtempSync(path.join(os.tmpdir(), 'sy-browsers-'));
      chmodSync(this.folders, 0o711);
    }
    return this.folders;
  }

  /** The managed policy, in a folder of its own (readable by the boxes' users) bound at POLICY_DIR. */
  private policyFolder(): string {
    if (!this.policies) {
      const dir = path.join(this.folderRoot(), 'policies');
      mkdirSync(dir, { mode: 0o755 });
      chmodSync(dir, 0o755);
      const file = path.join(dir, 'switchyard.json');
      writeFileSync(file, `${JSON.stringify(chromiumPolicy({ blockSchemes: this.opts.blockSchemes }), null, 2)}\n`, {
        mode: 0o644,
      });
      chmodSync(file, 0o644);
      this.policies = dir;
    }
    return this.policies;
  }
}
