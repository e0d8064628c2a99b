// @ts-check
'use strict';
/*
 * Code-step runner (README.md): a child process of one organisation that runs `code` steps in
 * V8 isolates of isolated-vm. It is started by worker.ts inside the operating-system layer
 * (src/containment: namespaces, a read-only view, no network) or, at CODE_ISOLATION=process,
 * without it; always with Node's permission model (reads of this file, the runners' shared
 * module and the isolated-vm addon only; no writes, children, workers), an empty environment
 * and, when the service runs as root, the user id it is given, to which it switches before it
 * takes any step.
 *
 * What both runner programs do alike — start options, the user switch and root check, the IPC
 * envelope, file limits, stray rejections — is src/containment/runner-common.cjs. This file is
 * the isolated-vm side, apart from the browser's script runner because its tenant code runs in
 * another V8 isolate and reaches this process only through copied values: it holds isolates and
 * contexts with their own heap and time limits, one execution at a time and synchronously,
 * whereas a Playwright script runs in this process's own isolate (a vm context) as an
 * asynchronous client of a browser connection.
 *
 * Language layer: a step runs in an isolate with its own heap (the step's memoryMb) and a
 * time limit; nothing of this process's heap can be reached from it, because isolates share no
 * objects: inputs cross as JSON text, `ctx.log` and `ctx.files.write` are functions of the
 * isolate that copy their arguments out, and results come back as copied strings.
 *
 * Protocol (version runner-common.cjs PROTOCOL.code, see protocol.ts):
 *   parent → child  {v, t: 'exec', id, code, data, timeoutMs, memoryMb, key?}
 *   child → parent  {v, t: 'ready'} · {v, t: 'log', id, line} · {v, t: 'done', id, outcome, reused, …}
 */
const common = require('../../containment/runner-common.cjs');

const OPTIONS = common.startOptions();
// The addon is loaded before the user switch, while every path of the view is readable.
const ivm = require(OPTIONS.addon).ivm;
common.becomeUser(OPTIONS.uid);
common.ignoreStrayRejections();

const PROTOCOL = common.PROTOCOL.code;
const LIMITS = OPTIONS.limits;
/** Contexts kept for reuse per isolate; 0: a fresh context per execution. */
const CONTEXTS = Math.min(Math.max(Number(OPTIONS.contexts) || 0, 0), 256);
/** Isolates (memory classes) one process keeps; the least recently used is disposed. */
const MAX_ISOLATES = 4;
const MAX_KEY = 1024; // protocol.ts MAX_CONTEXT_KEY
const SCRIPT_CACHE_SIZE = 50;
const STEP_FILE = 'step.js';
/** Characters of an error message sent back (a step can make its error's stack any size). */
const MAX_MESSAGE = 64 * 1024;
/** The file limits of a step, in the shared tally's terms. */
const FILE_LIMITS = Object.freeze({
  files: LIMITS.maxFiles,
  fileBytes: LIMITS.maxFileBytes,
  totalBytes: LIMITS.maxTotalFileBytes,
});

/*
 * Installed in every new context before any step code exists there, so the built-ins it
 * captures are the pristine ones. $0 and $1 are the host's log and file functions (isolated-vm
 * callbacks: functions of the isolate whose arguments are copied out). It returns, as a
 * reference the step cannot reach, `arm(input)`, which defines the one-shot `__syGo(fn)` for
 * one execution, `state()`, how that execution settled, and `reset()`, which deletes the
 * globals the execution added (README.md "Context reuse").
 */
const SETUP = `
  'use strict';
  const hostLog = $0, hostFile = $1;
  const g = globalThis;
  // Their callbacks would run later as tasks of the isolate, outside any step's time limit; and
  // WebAssembly memory is the one large allocation the isolate's heap limit does not see.
  delete g.FinalizationRegistry;
  delete Atomics.waitAsync;
  delete g.WebAssembly;
  const parse = JSON.parse, stringify = JSON.stringify, apply = Reflect.apply;
  const then = Promise.prototype.then, isView = ArrayBuffer.isView;
  const abLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const StringC = String, ErrorC = Error, TypeErrorC = TypeError, U8 = Uint8Array;
  const create = Object.create, freeze = Object.freeze, defineProperty = Object.defineProperty;
  const ownKeys = Reflect.ownKeys, deleteProperty = Reflect.deleteProperty, getOwn = Reflect.getOwnPropertyDescriptor;
  const getProto = Reflect.getPrototypeOf, isExtensible = Reflect.isExtensible, is = Object.is;
  const setHas = Set.prototype.has;
  const baseKeys = ownKeys(g);
  const known = new Set(baseKeys);
  const baseDescriptors = baseKeys.map((k) => getOwn(g, k));
  const baseProto = getProto(g);
  let state = null;

  const fail = (r) => { if (typeof r === 'string') throw new ErrorC(r); };
  const text = (v) => {
    if (typeof v === 'string') return v;
    try { const s = stringify(v); if (s !== undefined) return s; } catch {}
    return StringC(v);
  };
  const writeFile = (fileName, data, mimeType) => {
    const name = StringC(fileName === undefined || fileName === null ? '' : fileName);
    const mime = mimeType === undefined || mimeType === null ? undefined : StringC(mimeType);
    if (typeof data === 'string') return void fail(hostFile(name, data, mime, true));
    if (isView(data)) return void fail(hostFile(name, new U8(data.buffer, data.byteOffset, data.byteLength), mime, false));
    let isBuffer = false;
    try { apply(abLength, data, []); isBuffer = true; } catch {}
    if (isBuffer) return void fail(hostFile(name, new U8(data), mime, false));
    const json = stringify(data);
    if (json === undefined) throw new TypeErrorC('files.write: data must be a string, a Uint8Array/Buffer or a JSON-serialisable value');
    fail(hostFile(name, json, mime === undefined ? 'application/json' : mime, true));
  };
  // New function objects per execution: nothing a step hangs on ctx survives it.
  const ctx = (data) => {
    const log = function log(...args) {
      let line = '';
      for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + text(args[i]);
      fail(hostLog(line));
    };
    const files = freeze({ write: function write(fileName, data, mimeType) { return writeFile(fileName, data, mimeType); } });
    return freeze({ inputs: data.inputs, steps: data.steps, log, files });
  };
  const describe = (e) => {
    try {
      if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
        const stack = e.stack;
        if (typeof stack === 'string' && stack !== '') return stack;
        return StringC(e.name || 'Error') + ': ' + StringC(e.message);
      }
      return 'Uncaught ' + text(e);
    } catch { return 'Uncaught exception (its message could not be read)'; }
  };
  const goWith = (input) => function go(fn) {
    delete g.__syGo;
    const s = create(null);
    s.status = 'pending';
    state = s;
    const failed = (e) => { s.message = describe(e); s.status = 'error'; };
    const done = (v) => {
      if (typeof v === 'string') { s.kind = 'string'; s.text = v; }
      else if (v === undefined) { s.kind = 'undefined'; s.text = ''; }
      else {
        let json;
        try { json = stringify(v); } catch (e) { return failed(e); }
        if (json === undefined) return failed(new TypeErrorC('The return value (' + typeof v + ') cannot be serialised to JSON'));
        s.kind = 'json'; s.text = json;
      }
      s.status = 'ok';
    };
    try { apply(then, fn(ctx(parse(input))), [done, failed]); } catch (e) { failed(e); }
  };
  const out = create(null);
  out.arm = (input) => {
    state = null;
    const desc = create(null);
    desc.configurable = true;
    desc.value = goWith(input);
    defineProperty(g, '__syGo', desc);
  };
  // How the execution settled, as a plain object of strings (copied out).
  out.state = () => {
    const r = create(null);
    r.status = state === null ? 'unstarted' : state.status;
    if (state !== null) { r.kind = state.kind; r.text = state.text; r.message = state.message; }
    return r;
  };
  // Deletes the globals an execution added; false when the context cannot be kept.
  out.reset = () => {
    if (getProto(g) !== baseProto || !isExtensible(g)) return false;
    const now = ownKeys(g);
    for (let i = 0; i < now.length; i++) if (!apply(setHas, known, [now[i]]) && !deleteProperty(g, now[i])) return false;
    if (ownKeys(g).length !== baseKeys.length) return false;
    for (let i = 0; i < baseKeys.length; i++) {
      const a = getOwn(g, baseKeys[i]), b = baseDescriptors[i];
      if (a === undefined || !is(a.value, b.value) || a.get !== b.get || a.set !== b.set || a.writable !== b.writable || a.enumerable !== b.enumerable || a.configurable !== b.configurable) return false;
    }
    return true;
  };
  return out;
`;

/**
 * A file a step wrote (protocol.ts RawFile).
 * @typedef {{ name: string, mime: string | undefined, text: boolean, data: Buffer }} StepFile
 */
/**
 * The state of one execution: its files and how much it has logged.
 * @typedef {{ id: number, files: import('../../containment/runner-common.cjs').FileTally<StepFile>, logLines: number, logBytes: number, logCut: boolean }} Execution
 */
/**
 * A context of an isolate and the references of its setup (isolated-vm objects, untyped here).
 * @typedef {{ context: any, arm: any, state: any, reset: any, code: string | undefined, spoiled: boolean }} Box
 */
/**
 * The isolate of a memory class: its kept contexts by key, a spare context, compiled scripts by code.
 * @typedef {{ isolate: any, memoryMb: number, kept: Map<string, Box>, spare: Box | null, scripts: Map<string, any> }} Iso
 */
/**
 * A step's outcome as sent in `done` (protocol.ts DoneOutcome, without `reused`).
 * @typedef {{ outcome: string, message?: string, kind?: string, text?: string, files?: StepFile[] }} Reply
 */
/**
 * An `exec` message, checked by validExec.
 * @typedef {{ v: number, t: string, id: number, code: string, data: string, timeoutMs: number, memoryMb: number, key?: string }} ExecMessage
 */

/** @type {Execution | null} The execution in progress. */
let current = null;
/** @type {Map<number, Iso>} memoryMb → its isolate; the Map's order is the LRU order. */
const isolates = new Map();

/**
 * @param {unknown} line
 * @returns {string | undefined}
 */
function onLog(line) {
  const exec = current;
  if (!exec) return 'no execution in progress';
  if (typeof line !== 'string') return 'log: bad line';
  if (exec.logCut) return undefined;
  const room = Math.min(LIMITS.maxLogBytes - exec.logBytes, LIMITS.maxLogLineBytes);
  if (exec.logLines >= LIMITS.maxLogLines || room <= 0) {
    exec.logCut = true;
    ipc.send(common.MESSAGE.log, {
      id: exec.id,
      line: `[log truncated: at most ${LIMITS.maxLogLines} lines and ${LIMITS.maxLogBytes} bytes per step]`,
    });
    return undefined;
  }
  const cut = Buffer.byteLength(line) > room ? Buffer.from(line).subarray(0, room).toString() : line;
  exec.logLines += 1;
  exec.logBytes += Buffer.byteLength(cut);
  ipc.send(common.MESSAGE.log, { id: exec.id, line: cut });
  return undefined;
}

/**
 * @param {unknown} name
 * @param {unknown} data
 * @param {unknown} mime
 * @param {unknown} text
 * @returns {string | undefined}
 */
function onFile(name, data, mime, text) {
  const exec = current;
  if (!exec) return 'no execution in progress';
  if (typeof name !== 'string' || (mime !== undefined && typeof mime !== 'string')) return 'files.write: bad arguments';
  let bytes;
  if (typeof data === 'string') {
    // Every character is at least one UTF-8 byte: a string this long is too big anyway.
    if (data.length > LIMITS.maxFileBytes)
      return `files.write: "${name.slice(0, 100)}" is ${data.length}+ bytes; the limit is ${LIMITS.maxFileBytes} bytes per file`;
    bytes = Buffer.from(data, 'utf8');
  } else if (data instanceof Uint8Array) {
    bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  } else {
    return 'files.write: data must be a string, a Uint8Array/Buffer or a JSON-serialisable value';
  }
  // Writing a name again replaces the earlier file.
  const refused = exec.files.add({ name, mime, text: text === true, data: bytes });
  if (refused === 'fileBytes')
    return `files.write: "${name.slice(0, 100)}" is ${bytes.length} bytes; the limit is ${LIMITS.maxFileBytes} bytes per file`;
  if (refused === 'files') return `files.write: at most ${LIMITS.maxFiles} files per step`;
  if (refused === 'totalBytes')
    return `files.write: the files of a step may total at most ${LIMITS.maxTotalFileBytes} bytes`;
  return undefined;
}

const hostLog = new ivm.Callback(onLog);
const hostFile = new ivm.Callback(onFile);

/** The isolate of a memory class, made on first use; the least recently used goes beyond MAX_ISOLATES. */
/**
 * @param {number} memoryMb
 * @returns {Iso}
 */
function isolateFor(memoryMb) {
  let iso = isolates.get(memoryMb);
  if (iso && iso.isolate.isDisposed) {
    isolates.delete(memoryMb);
    iso = undefined;
  }
  if (iso) {
    isolates.delete(memoryMb); // re-insert: the Map's order is the LRU order
  } else {
    iso = {
      isolate: new ivm.Isolate({ memoryLimit: memoryMb }),
      memoryMb,
      kept: new Map(),
      spare: null,
      scripts: new Map(),
    };
    if (isolates.size >= MAX_ISOLATES) {
      const [oldest, victim] = /** @type {[number, Iso]} */ (isolates.entries().next().value);
      isolates.delete(oldest);
      dispose(victim);
    }
  }
  isolates.set(memoryMb, iso);
  return iso;
}

/** @param {Iso} iso */
function dispose(iso) {
  try {
    if (!iso.isolate.isDisposed) iso.isolate.dispose();
  } catch {
    // already gone
  }
}

/**
 * @param {Iso} iso
 * @returns {Box}
 */
function newContext(iso) {
  const context = iso.isolate.createContextSync();
  const api = context.evalClosureSync(SETUP, [hostLog, hostFile], { result: { reference: true } });
  return {
    context,
    arm: api.getSync('arm', { reference: true }),
    state: api.getSync('state', { reference: true }),
    reset: api.getSync('reset', { reference: true }),
    code: undefined,
    spoiled: false,
  };
}

/** @param {Box} box */
function release(box) {
  for (const ref of [box.arm, box.state, box.reset, box.context]) {
    try {
      ref.release();
    } catch {
      // its isolate is gone
    }
  }
}

/**
 * @param {Iso} iso
 * @param {string} code
 */
function compile(iso, code) {
  let script = iso.scripts.get(code);
  if (script) {
    iso.scripts.delete(code); // re-insert: the Map's order is the LRU order
  } else {
    script = iso.isolate.compileScriptSync(`__syGo(async function (ctx) {\n${code}\n})`, {
      filename: STEP_FILE,
      lineOffset: -1,
    });
    if (iso.scripts.size >= SCRIPT_CACHE_SIZE)
      iso.scripts.delete(/** @type {string} */ (iso.scripts.keys().next().value));
  }
  iso.scripts.set(code, script);
  return script;
}

/** `SyntaxError: <what> (line N)`: isolated-vm appends `[step.js:N:M]` to the message. */
/** @param {any} err */
function syntaxMessage(err) {
  const text = String(err && err.message);
  const at = /\s*\[step\.js:(\d+):\d+\]\s*$/.exec(text) || /step\.js:(\d+)/.exec(String(err && err.stack));
  const what = at && at.index !== undefined && text.endsWith(at[0]) ? text.slice(0, at.index) : text;
  return `SyntaxError: ${what}${at ? ` (line ${at[1]})` : ''}`;
}

/** The state of one execution: its files and how much it has logged. */
/**
 * @param {number} id
 * @returns {Execution}
 */
function newExecution(id) {
  /** @type {(a: StepFile, b: StepFile) => boolean} */
  const sameName = (a, b) => a.name === b.name;
  return { id, files: new common.FileTally(FILE_LIMITS, sameName), logLines: 0, logBytes: 0, logCut: false };
}

/**
 * @param {ExecMessage} msg
 * @param {Iso} iso
 * @param {Box} box
 * @returns {Reply}
 */
function run(msg, iso, box) {
  current = newExecution(msg.id);
  try {
    let script;
    try {
      script = compile(iso, msg.code);
    } catch (err) {
      if (iso.isolate.isDisposed) return memoryOutcome(iso);
      return { outcome: 'invalid', message: syntaxMessage(err) };
    }
    const startedAt = performance.now();
    let thrown;
    try {
      box.arm.applySync(undefined, [msg.data]);
      // Microtasks run to their end inside this call, under the same time limit.
      script.runSync(box.context, { timeout: msg.timeoutMs });
    } catch (err) {
      if (iso.isolate.isDisposed) return memoryOutcome(iso);
      if (performance.now() - startedAt >= msg.timeoutMs || /timed out/i.test(common.messageOf(err))) {
        return { outcome: 'timeout', message: `Step timed out after ${msg.timeoutMs} ms` };
      }
      // A rejection no one handled (isolated-vm reports it here), or code that broke out of the
      // function wrapper: the step's own outcome below decides; the context is not kept.
      thrown = err;
      box.spoiled = true;
    }
    let state;
    try {
      state = box.state.applySync(undefined, [], { result: { copy: true } });
    } catch (err) {
      if (iso.isolate.isDisposed) return memoryOutcome(iso);
      return {
        outcome: 'error',
        message: `Error: the step's outcome could not be read (${common.messageOf(err).slice(0, 500)})`,
      };
    }
    if (state.status === 'unstarted') {
      const why = thrown === undefined ? '' : ` (${common.messageOf(thrown).slice(0, 500)})`;
      return { outcome: 'error', message: `Error: the step code did not run: it left its function wrapper${why}` };
    }
    if (state.status === 'pending') {
      // No timers, I/O or host promises exist in an isolate: nothing can settle it any more.
      return {
        outcome: 'stalled',
        message: `Step timed out: it awaits a promise that can never settle (limit ${msg.timeoutMs} ms)`,
      };
    }
    if (state.status === 'error') return { outcome: 'error', message: String(state.message) };
    const text = String(state.text);
    if (Buffer.byteLength(text) > LIMITS.maxResultBytes) {
      return {
        outcome: 'error',
        message: `Error: the step result is ${Buffer.byteLength(text)} bytes; the limit is ${LIMITS.maxResultBytes} bytes`,
      };
    }
    return { outcome: 'ok', kind: String(state.kind), text, files: current.files.list };
  } finally {
    current = null;
  }
}

/**
 * @param {Iso} iso
 * @returns {Reply}
 */
function memoryOutcome(iso) {
  isolates.delete(iso.memoryMb);
  return { outcome: 'memory', message: `the step's memory limit of ${iso.memoryMb} MB was reached` };
}

/** The kept context of `key` for `code`, taken out of the cache, or undefined. */
/**
 * @param {Iso} iso
 * @param {string} key
 * @param {string} code
 */
function takeKept(iso, key, code) {
  const box = iso.kept.get(key);
  if (!box) return undefined;
  iso.kept.delete(key);
  if (box.code === code) return box; // the key names the code; a mismatch is not reused
  release(box);
  return undefined;
}

/** Keeps a context after an execution that returned normally, if its globals reset cleanly. */
/**
 * @param {Iso} iso
 * @param {string} key
 * @param {string} code
 * @param {Box} box
 */
function keep(iso, key, code, box) {
  let clean = false;
  try {
    clean = box.reset.applySync(undefined, [], { timeout: 100 }) === true;
  } catch {
    clean = false;
  }
  if (!clean) return release(box);
  box.code = code;
  iso.kept.set(key, box);
  if (iso.kept.size > CONTEXTS) {
    const [oldest, victim] = /** @type {[string, Box]} */ (iso.kept.entries().next().value);
    iso.kept.delete(oldest);
    release(victim);
  }
  // What steps leave reachable from their built-ins stays alive with their contexts: a heap
  // that is half full drops the whole isolate (its memory is freed at once, not at the next
  // full collection) rather than let them crowd out a later step of this memory class.
  const heap = iso.isolate.getHeapStatisticsSync();
  if (heap.used_heap_size > iso.memoryMb * 1024 * 1024 * 0.5) {
    isolates.delete(iso.memoryMb);
    dispose(iso);
  }
}

/** The parent is trusted but checked: anything malformed ends this process (worker.ts). */
/**
 * @param {any} m
 * @returns {m is ExecMessage}
 */
function validExec(m) {
  return (
    m !== null &&
    typeof m === 'object' &&
    m.v === PROTOCOL &&
    m.t === common.MESSAGE.exec &&
    Number.isSafeInteger(m.id) &&
    typeof m.code === 'string' &&
    typeof m.data === 'string' &&
    typeof m.timeoutMs === 'number' &&
    m.timeoutMs > 0 &&
    Number.isSafeInteger(m.memoryMb) &&
    m.memoryMb >= 8 &&
    m.memoryMb <= 4096 &&
    (m.key === undefined || (typeof m.key === 'string' && m.key.length > 0 && m.key.length <= MAX_KEY))
  );
}

/** @param {ExecMessage} msg */
function execute(msg) {
  const key = CONTEXTS > 0 ? msg.key : undefined;
  const iso = isolateFor(msg.memoryMb);
  let box = key === undefined ? undefined : takeKept(iso, key, msg.code);
  const reused = box !== undefined;
  if (!box) {
    box = iso.spare || newContext(iso);
    iso.spare = null;
  }
  const reply = run(msg, iso, box);
  if (typeof reply.message === 'string' && reply.message.length > MAX_MESSAGE)
    reply.message = `${reply.message.slice(0, MAX_MESSAGE)}…`;
  ipc.send(common.MESSAGE.done, { id: msg.id, reused, ...reply });
  // Only a step that returned normally leaves a context to reuse.
  if (iso.isolate.isDisposed) return;
  if (key !== undefined && reply.outcome === 'ok' && !box.spoiled) keep(iso, key, msg.code, box);
  else release(box);
  // Prepare a fresh context while idle, after the reply is on its way.
  setImmediate(() => {
    if (!iso.isolate.isDisposed && !iso.spare && isolates.get(iso.memoryMb) === iso) iso.spare = newContext(iso);
  });
}

/*
 * Tests only (`breach` of the start options, which worker.ts writes only when test code passed
 * AppOptions.assumeBreach to the composition root, src/app.ts): the step runs in this
 * process's own realm with its real `process`, as if the language layer had been broken, so
 * tests can show that the process and operating-system layers hold on their own.
 */
/** @param {ExecMessage} msg */
function executeBreached(msg) {
  current = newExecution(msg.id);
  const exec = current;
  const data = JSON.parse(msg.data);
  const ctx = {
    inputs: data.inputs,
    steps: data.steps,
    log: (/** @type {unknown[]} */ ...a) => onLog(a.map(String).join(' ')),
    files: {
      write: (/** @type {unknown} */ n, /** @type {unknown} */ d, /** @type {unknown} */ m) =>
        onFile(String(n), typeof d === 'string' ? d : d, m, typeof d === 'string'),
    },
  };
  const finish = (/** @type {Reply} */ reply) => {
    current = null;
    ipc.send(common.MESSAGE.done, { id: msg.id, reused: false, ...reply });
  };
  let fn;
  try {
    fn = require('node:vm').runInThisContext(`(async function (ctx, process) {\n${msg.code}\n})`, {
      filename: STEP_FILE,
    });
  } catch (err) {
    return finish({ outcome: 'invalid', message: syntaxMessage(err) });
  }
  Promise.resolve()
    .then(() => fn(ctx, process))
    .then(
      (v) =>
        finish({
          outcome: 'ok',
          kind: v === undefined ? 'undefined' : typeof v === 'string' ? 'string' : 'json',
          text: v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v),
          files: exec.files.list,
        }),
      (err) => finish({ outcome: 'error', message: String(err && err.stack ? err.stack : err) }),
    );
}

/** The answer to a message this runner does not speak: the parent refuses it (protocol.ts) and ends the process. */
const unsupported = () => ipc.send(common.MESSAGE.error, { message: 'unsupported message' });
const ipc = common.channel(
  PROTOCOL,
  {
    [common.MESSAGE.exec]: (msg) => {
      if (!validExec(msg)) return unsupported();
      if (OPTIONS.breach !== 'off') executeBreached(msg);
      else execute(msg);
    },
  },
  unsupported,
);

// A warm context of the default memory class, so the first step does not wait for it.
if (Number.isSafeInteger(OPTIONS.warmMemoryMb)) {
  const iso = isolateFor(OPTIONS.warmMemoryMb);
  iso.spare = newContext(iso);
}
ipc.ready();
