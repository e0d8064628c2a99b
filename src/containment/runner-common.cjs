// @ts-check
'use strict';
/*
 * What the two runner programs of tenant code share (README.md "Runner programs"):
 * src/engine/sandbox/runner.cjs (code steps, in isolated-vm isolates) and
 * src/browser/script-runner.cjs (playwright_run scripts, through a Playwright client). Both are
 * started alike — one JSON argument, an empty environment, Node's permission model, their own
 * user, bubblewrap where the operating-system layer is in force — and speak to their parent over
 * Node's IPC channel in the same envelope. Plain JavaScript of Node's own modules only: both
 * launches grant this one file to the permission model and bind it into the view, read-only
 * (runners.ts RUNNER_COMMON_PATH), and a runner loads it before it switches users.
 */

/**
 * Versions of the messages between each runner program and its parent: the runner and the
 * parent's side (src/containment/runners.ts RUNNER_PROTOCOL) both read them here. `code`:
 * src/engine/sandbox/runner.cjs; `script`: src/browser/script-runner.cjs; `box`:
 * src/browser/box-server.cjs.
 */
const PROTOCOL = Object.freeze({ code: 2, script: 2, box: 1 });

/**
 * Message types (`t`) both sides of the runners' channels use. From the parent: `exec` (a code
 * step), `run` (a script's task). From a runner: `ready` (its code is loaded and its user
 * switched; a box also sends its server's path), `log`, `done` (a task's outcome), `error` (the
 * code runner refuses a message), `idle` (the script runner is ready for its next task), `failed`
 * (a box's browser did not start).
 */
const MESSAGE = Object.freeze({
  exec: 'exec',
  run: 'run',
  ready: 'ready',
  log: 'log',
  done: 'done',
  error: 'error',
  idle: 'idle',
  failed: 'failed',
});

/** Exit codes of a runner that ends itself (sysexits.h), reported by its parent from the exit. */
const EXIT = Object.freeze({
  /** EX_SOFTWARE: its start options or a message of its parent are not what it speaks. */
  protocol: 70,
  /** EX_CONFIG: it could not become its unprivileged user, or would run tenant code as root. */
  user: 78,
});

/**
 * Test-only modes: tenant code gets the runner's own `process`. A parent writes one other than
 * `off` only when test code asked for it through the composition root (src/app.ts
 * AppOptions.assumeBreach); nothing in the configuration or the environment does.
 */
const BREACHES = ['off', 'process', 'unrestricted'];

/**
 * A runner's start options: what its parent wrote (each runner reads its own fields), with `uid`
 * and `breach` checked here.
 * @typedef {Readonly<Record<string, any> & { uid: number | undefined, breach: 'off' | 'process' | 'unrestricted' }>} StartOptions
 */

/**
 * `process` with the POSIX user calls, which Node has on every platform the runners run on (Linux).
 * @typedef {NodeJS.Process & Required<Pick<NodeJS.Process, 'getuid' | 'geteuid' | 'getgid' | 'setgid' | 'setuid' | 'setgroups' | 'send'>>} PosixProcess
 */
const posix = /** @type {PosixProcess} */ (process);

/**
 * The start options: argv[2], one JSON object written by the parent (src/engine/sandbox/flags.ts
 * runnerArgv, src/browser/scripts.ts spawnRunner). `uid` is kept only as a positive safe integer
 * and `breach` only as one of BREACHES (else `off`); an argument that is not a JSON object ends
 * the process.
 */
/** @returns {StartOptions} */
function startOptions() {
  let opts;
  try {
    opts = JSON.parse(/** @type {string} */ (process.argv[2]));
  } catch {
    opts = undefined;
  }
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) process.exit(EXIT.protocol);
  return Object.freeze({
    ...opts,
    uid: Number.isSafeInteger(opts.uid) && opts.uid > 0 ? opts.uid : undefined,
    breach: BREACHES.includes(opts.breach) ? opts.breach : 'off',
  });
}

/**
 * The unprivileged user `uid` (undefined: the runner keeps the service's own user): a runner that
 * starts as root drops the groups, then switches the group, then the user (after which none of
 * them can be changed back), and checks the outcome. Tenant code never runs as root, whatever the
 * parent asked for: a runner that is root after this exits. The parents check the user from
 * outside as well (tree.ts uidOf). Called once the runner's own code is loaded (after the switch
 * the view's folders may not be passable) and before any tenant code.
 */
/** @param {number | undefined} uid */
function becomeUser(uid) {
  if (uid !== undefined && posix.getuid() === 0) {
    try {
      posix.setgroups([]);
      posix.setgid(uid);
      posix.setuid(uid);
    } catch {
      process.exit(EXIT.user);
    }
    if (posix.getuid() !== uid || posix.geteuid() !== uid || posix.getgid() !== uid) process.exit(EXIT.user);
  }
  if (posix.getuid() === 0 || posix.geteuid() === 0) process.exit(EXIT.user);
}

/**
 * Tenant code that runs in the runner's own event loop (every script; code steps under the breach
 * switch) may leave a rejected promise that nothing handles. Node would end the process for it,
 * and with it the task that follows; here it ends nothing: the outcome of a task is what its own
 * promise settles to.
 */
function ignoreStrayRejections() {
  process.on('unhandledRejection', () => undefined);
}

/**
 * A message of the parent as it arrives: `v` and `t` are checked by the channel, every other
 * field by the handler of its type.
 * @typedef {{ v: unknown, t: string, [field: string]: any }} Message
 */

/**
 * The IPC channel with the parent (serialization `advanced`, so Buffers cross as bytes). Every
 * message either way is an object `{v, t, ...fields}`: `v` the runner's protocol version, `t` its
 * type. A message of the parent goes to `handlers[t]`, which checks its fields; one of another
 * version or of a type not in `handlers` goes to `invalid`. Once the parent is gone (a crash,
 * kill -9) nothing else would end the runner, so it exits; what it would still send is dropped.
 */
/**
 * @param {number} version
 * @param {Record<string, (msg: Message) => void>} handlers
 * @param {(msg: unknown) => void} invalid
 */
function channel(version, handlers, invalid) {
  /**
   * @param {string} t
   * @param {Record<string, unknown>} fields
   */
  const send = (t, fields) => {
    if (process.connected) posix.send({ v: version, t, ...fields });
  };
  process.on('message', (/** @type {unknown} */ raw) => {
    const msg = /** @type {Message} */ (raw);
    const known =
      msg !== null &&
      typeof msg === 'object' &&
      msg.v === version &&
      typeof msg.t === 'string' &&
      Object.prototype.hasOwnProperty.call(handlers, msg.t);
    const handler = known ? handlers[msg.t] : undefined;
    if (handler) handler(msg);
    else invalid(msg);
  });
  process.on('disconnect', () => process.exit(0));
  return {
    send,
    /** The runner's code is loaded and its user switched: the parent checks the user from outside, then sends work. */
    ready: () => send(MESSAGE.ready, {}),
  };
}

/**
 * The files one task hands back, within `limits`: `files` files, `fileBytes` bytes each,
 * `totalBytes` together. A file is an object with a Buffer `data`; with `sameFile`, a file for
 * which it is true of one already kept replaces that one (code steps: a name written again),
 * else every file is kept.
 */
/**
 * @template {{ data: Buffer }} F
 */
class FileTally {
  /**
   * @param {{ files: number, fileBytes: number, totalBytes: number }} limits
   * @param {(a: F, b: F) => boolean} [sameFile]
   */
  constructor(limits, sameFile) {
    this.limits = limits;
    this.sameFile = sameFile;
    /** @type {F[]} The files kept, in the order they came. */
    this.list = [];
    this.bytes = 0;
  }

  /**
   * Keeps `file` and answers undefined, or answers the limit it would pass — `fileBytes`,
   * `files` or `totalBytes` — and keeps nothing.
   * @param {F} file
   * @returns {'fileBytes' | 'files' | 'totalBytes' | undefined}
   */
  add(file) {
    const size = file.data.length;
    if (size > this.limits.fileBytes) return 'fileBytes';
    const same = this.sameFile;
    const at = same ? this.list.findIndex((f) => same(f, file)) : -1;
    if (at < 0 && this.list.length >= this.limits.files) return 'files';
    const kept = at < 0 ? undefined : this.list[at];
    const before = kept === undefined ? 0 : kept.data.length;
    if (this.bytes - before + size > this.limits.totalBytes) return 'totalBytes';
    if (at < 0) this.list.push(file);
    else this.list[at] = file;
    this.bytes += size - before;
    return undefined;
  }
}

/** A value as text: strings as they are, nothing for undefined and null, else its JSON where it has one, else String(). */
/**
 * @param {unknown} v
 * @returns {string}
 */
function text(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

/** The message of a thrown value: an error's `message`, else the value as text. */
/** @param {unknown} err */
function messageOf(err) {
  return err !== null && typeof err === 'object' && 'message' in err ? String(err.message) : text(err);
}

module.exports = {
  PROTOCOL,
  MESSAGE,
  EXIT,
  startOptions,
  becomeUser,
  ignoreStrayRejections,
  channel,
  FileTally,
  text,
  messageOf,
};
