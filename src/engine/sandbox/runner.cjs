'use strict';
/*
 * Sandbox runner (src/engine/README.md: code steps run "isolated from the service: a separate isolate or
 * process"). A child process started by worker.ts with the permission model (read access to
 * this file only; no writes, child processes, workers or addons), an empty environment, a heap
 * limit and --disallow-code-generation-from-strings. It runs one execution at a time and talks
 * to the service over the IPC channel only. Plain JavaScript so it starts without tsx or a
 * loader. Protocol (version 1, see protocol.ts):
 *   parent → child  {v, t: 'exec', id, code, data, timeoutMs, key?}
 *   child → parent  {v, t: 'ready'} · {v, t: 'log', id, line} · {v, t: 'done', id, outcome, reused, …}
 *
 * Contexts (README.md "Context reuse"): an execution without `key` gets a fresh vm context,
 * used once. With a key (org + workflow + step index + code hash), the context of the last
 * execution of that key is kept if that execution returned normally and its globals could be
 * reset; at most CONTEXTS such contexts, least recently used evicted.
 *
 * Rule that keeps the vm boundary tight: no object of this (host) realm is ever handed to user
 * code. Data enters as JSON text parsed inside the context, ctx functions are context-realm
 * closures around one host bridge that takes and returns primitives only, and results leave as
 * strings produced inside the context (within the vm timeout).
 */
const vm = require('node:vm');
const v8 = require('node:v8');
const { types } = require('node:util');

const PROTOCOL = 1;
const LIMITS = JSON.parse(process.argv[2] || '{}');
/** Contexts kept for reuse (second argument; worker.ts passes the pool's option); 0: none. */
const CONTEXTS = Math.min(Math.max(Number.parseInt(process.argv[3] || '0', 10) || 0, 0), 256);
/** Kept contexts are all dropped when the heap holds more than half the step's limit (flags.ts). */
const HEAP_CEILING = heapCeiling();
const MAX_KEY = 1024; // protocol.ts MAX_CONTEXT_KEY
const CONTEXT_OPTIONS = { codeGeneration: { strings: true, wasm: false }, microtaskMode: 'afterEvaluate' };
const SCRIPT_CACHE_SIZE = 50;
const STEP_FILE = 'step.js';
/** Characters of an error message sent back (a step can make its error's stack any size). */
const MAX_MESSAGE = 64 * 1024;

// Host-realm intrinsics captured before anything else runs (typed-array reads must not go
// through prototype getters a step could have replaced in its own realm).
const TA_PROTO = Object.getPrototypeOf(Uint8Array.prototype);
const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
const taBuffer = getter(TA_PROTO, 'buffer');
const taOffset = getter(TA_PROTO, 'byteOffset');
const taLength = getter(TA_PROTO, 'byteLength');
const dvBuffer = getter(DataView.prototype, 'buffer');
const dvOffset = getter(DataView.prototype, 'byteOffset');
const dvLength = getter(DataView.prototype, 'byteLength');
const send = process.send.bind(process);

/*
 * Installed in every new context before user code exists, so the intrinsics it captures are
 * pristine. `install` returns (in a null-prototype object read once, before any user code)
 * the context's global, an error maker and `arm(input)`, which defines `__syGo(fn)` for one
 * execution: deleted on its first call, it builds a fresh ctx (new log and files.write
 * closures, inputs parsed anew) in the context's realm, starts the step function and records
 * how it settles in a null-prototype object that user code cannot reach.
 */
const SETUP = new vm.Script(`(function () {
  'use strict';
  const g = globalThis;
  const parse = JSON.parse, stringify = JSON.stringify, apply = Reflect.apply;
  const then = Promise.prototype.then, isView = ArrayBuffer.isView;
  const abLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const StringC = String, ErrorC = Error, TypeErrorC = TypeError, U8 = Uint8Array;
  const create = Object.create, freeze = Object.freeze, defineProperty = Object.defineProperty;
  // Its callbacks would run later as tasks of this process, outside the vm timeout and
  // possibly during another step's execution.
  delete g.FinalizationRegistry;
  return function install(host) {
    const call = (op, a, b, c) => {
      let r;
      try { r = host(op, a, b, c); } catch { r = 'internal sandbox error'; }
      if (typeof r === 'string') throw new ErrorC(r);
    };
    const text = (v) => {
      if (typeof v === 'string') return v;
      try { const s = stringify(v); if (s !== undefined) return s; } catch {}
      return StringC(v);
    };
    const writeFile = (fileName, data, mimeType) => {
      const name = StringC(fileName === undefined || fileName === null ? '' : fileName);
      const mime = mimeType === undefined || mimeType === null ? undefined : StringC(mimeType);
      let isBuffer = false;
      try { apply(abLength, data, []); isBuffer = true; } catch {}
      if (typeof data === 'string') return void call('file', name, data, mime);
      if (isView(data)) return void call('file', name, data, mime);
      if (isBuffer) return void call('file', name, new U8(data), mime);
      const json = stringify(data);
      if (json === undefined) throw new TypeErrorC('files.write: data must be a string, a Uint8Array/Buffer or a JSON-serialisable value');
      call('file', name, json, mime === undefined ? 'application/json' : mime);
    };
    // New function objects per execution: nothing a step hangs on ctx survives it.
    const ctx = (data) => {
      const log = function log(...args) {
        let line = '';
        for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + text(args[i]);
        call('log', line);
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
      const state = create(null);
      state.status = 'pending';
      call('begin', state);
      const fail = (e) => { state.message = describe(e); state.status = 'error'; };
      const done = (v) => {
        if (typeof v === 'string') { state.kind = 'string'; state.text = v; }
        else if (v === undefined) { state.kind = 'undefined'; state.text = ''; }
        else {
          let json;
          try { json = stringify(v); } catch (e) { return fail(e); }
          if (json === undefined) return fail(new TypeErrorC('The return value (' + typeof v + ') cannot be serialised to JSON'));
          state.kind = 'json'; state.text = json;
        }
        state.status = 'ok';
      };
      try { apply(then, fn(ctx(parse(input))), [done, fail]); } catch (e) { fail(e); }
    };
    // Called from the host before the vm timeout starts, in a context an earlier execution of
    // the same key may have touched: a null-prototype descriptor reads nothing a step could
    // have planted on Object.prototype.
    const arm = (input) => {
      const desc = create(null);
      desc.configurable = true;
      desc.value = goWith(input);
      defineProperty(g, '__syGo', desc);
    };
    const out = create(null);
    out.global = g;
    out.arm = arm;
    out.errorIn = (m) => new ErrorC(m);
    return out;
  };
})()`, { filename: 'sandbox-setup.js' });

let current = null; // the execution in progress: { id, state, files, fileBytes, logLines, logBytes, logCut, imported, errorIn }
let spare = null; // a fresh context prepared while idle
const kept = new Map(); // key → context kept for reuse; the Map's order is the LRU order
const scripts = new Map();

function hostBridge(op, a, b, c) {
  try {
    const exec = current;
    if (!exec) return 'no execution in progress';
    if (op === 'begin') { exec.state = a; return undefined; }
    if (op === 'log') return onLog(exec, a);
    if (op === 'file') return onFile(exec, a, b, c);
    return 'unknown sandbox operation';
  } catch {
    return 'internal sandbox error';
  }
}

function newContext() {
  const sandbox = Object.create(null); // a null prototype: globalThis.constructor stays in the context's realm
  const context = vm.createContext(sandbox, CONTEXT_OPTIONS);
  const made = SETUP.runInContext(context)(hostBridge);
  // Read once, before any user code exists in the context.
  return { sandbox, context, global: made.global, arm: made.arm, errorIn: made.errorIn, code: undefined, snapshot: undefined };
}

/*
 * Globals between two executions of one key (README.md "Context reuse"). The global's own
 * properties are recorded once, before the context's first execution; afterwards every
 * property the step added is deleted. A step that changed or deleted a recorded property
 * (`JSON = …`, `delete Math`), added one that cannot be deleted, or changed the global's
 * prototype leaves a context that is not kept: the next execution gets a fresh one, which is
 * how such changes are undone (Node's vm interceptors do not restore them reliably in place).
 * All of it runs in this realm and runs no code of the step: what a step sets on its global
 * lives on `sandbox` (a plain object of this realm) and is only listed and deleted; the
 * descriptors compared are read from the global only once `sandbox` is empty (for a property
 * held by `sandbox`, Node answers with a descriptor object of the step's realm, whose fields
 * are read through the step's Object.prototype).
 */
function snapshot(box) {
  const g = box.global;
  const keys = Reflect.ownKeys(g);
  box.snapshot = { keys, known: new Set(keys), descriptors: keys.map((k) => Reflect.getOwnPropertyDescriptor(g, k)), proto: Reflect.getPrototypeOf(g) };
}

function sameDescriptor(now, then) {
  return now !== undefined && Object.is(now.value, then.value) && now.get === then.get && now.set === then.set &&
    now.writable === then.writable && now.enumerable === then.enumerable && now.configurable === then.configurable;
}

/** Deletes what the last execution added to the global; false when the context cannot be kept. */
function resetGlobals(box) {
  const g = box.global;
  const { keys, known, descriptors, proto } = box.snapshot;
  const held = Reflect.ownKeys(box.sandbox);
  for (let i = 0; i < held.length; i++) if (known.has(held[i])) return false; // a recorded global set or redefined
  if (Reflect.getPrototypeOf(g) !== proto || !Reflect.isExtensible(g)) return false;
  const now = Reflect.ownKeys(g);
  if (now.length !== keys.length || held.length > 0) {
    for (let i = 0; i < now.length; i++) if (!known.has(now[i]) && !Reflect.deleteProperty(g, now[i])) return false;
    if (Reflect.ownKeys(box.sandbox).length > 0 || Reflect.ownKeys(g).length !== keys.length) return false;
  }
  for (let i = 0; i < keys.length; i++) {
    if (!sameDescriptor(Reflect.getOwnPropertyDescriptor(g, keys[i]), descriptors[i])) return false;
  }
  return true;
}

/** The kept context of `key` for `code`, taken out of the cache, or undefined. */
function takeKept(key, code) {
  const box = kept.get(key);
  if (!box) return undefined;
  kept.delete(key);
  return box.code === code ? box : undefined; // the key names the code; a mismatch is not reused
}

/** Keeps a context after an execution that returned normally, if its globals reset cleanly. */
function keep(key, code, box) {
  if (!resetGlobals(box)) return;
  box.code = code;
  kept.set(key, box);
  if (kept.size > CONTEXTS) kept.delete(kept.keys().next().value);
  // What steps leave reachable from their built-ins stays alive with their contexts: a heap
  // that is half full drops them all rather than let them crowd out a later step.
  if (v8.getHeapStatistics().used_heap_size > HEAP_CEILING) kept.clear();
}

function heapCeiling() {
  const flag = process.execArgv.find((a) => a.startsWith('--max-old-space-size='));
  const mb = flag ? Number(flag.slice('--max-old-space-size='.length)) : NaN;
  return Number.isFinite(mb) && mb > 0 ? mb * 1024 * 1024 * 0.5 : v8.getHeapStatistics().heap_size_limit * 0.5;
}

function onLog(exec, line) {
  if (typeof line !== 'string') return 'log: bad line';
  if (exec.logCut) return undefined;
  const room = Math.min(LIMITS.maxLogBytes - exec.logBytes, LIMITS.maxLogLineBytes);
  if (exec.logLines >= LIMITS.maxLogLines || room <= 0) {
    exec.logCut = true;
    send({ v: PROTOCOL, t: 'log', id: exec.id, line: `[log truncated: at most ${LIMITS.maxLogLines} lines and ${LIMITS.maxLogBytes} bytes per step]` });
    return undefined;
  }
  const cut = Buffer.byteLength(line) > room ? Buffer.from(line).subarray(0, room).toString() : line;
  exec.logLines += 1;
  exec.logBytes += Buffer.byteLength(cut);
  send({ v: PROTOCOL, t: 'log', id: exec.id, line: cut });
  return undefined;
}

/** A view of the bytes written (no copy yet), or undefined for anything else. */
function viewOf(data) {
  if (typeof data === 'string') return undefined;
  if (types.isDataView(data)) {
    return new Uint8Array(Reflect.apply(dvBuffer, data, []), Reflect.apply(dvOffset, data, []), Reflect.apply(dvLength, data, []));
  }
  if (types.isTypedArray(data)) {
    return new Uint8Array(Reflect.apply(taBuffer, data, []), Reflect.apply(taOffset, data, []), Reflect.apply(taLength, data, []));
  }
  return undefined;
}

/** Bytes of `data` as a Buffer of its own, sized before anything is copied. */
function bytesOf(data) {
  if (typeof data === 'string') {
    // Every character is at least one UTF-8 byte: a string this long is too big anyway.
    if (data.length > LIMITS.maxFileBytes) return { size: data.length };
    const bytes = Buffer.from(data, 'utf8');
    return { size: bytes.length, bytes };
  }
  const view = viewOf(data);
  if (!view) return undefined;
  return view.length > LIMITS.maxFileBytes ? { size: view.length } : { size: view.length, bytes: Buffer.from(view) };
}

function onFile(exec, name, data, mime) {
  if (typeof name !== 'string' || (mime !== undefined && typeof mime !== 'string')) return 'files.write: bad arguments';
  const index = exec.files.findIndex((f) => f.name === name);
  if (index < 0 && exec.files.length >= LIMITS.maxFiles) return `files.write: at most ${LIMITS.maxFiles} files per step`;
  const sized = bytesOf(data);
  if (!sized) return 'files.write: data must be a string, a Uint8Array/Buffer or a JSON-serialisable value';
  if (!sized.bytes || sized.size > LIMITS.maxFileBytes) return `files.write: "${name.slice(0, 100)}" is ${sized.size}${typeof data === 'string' ? '+' : ''} bytes; the limit is ${LIMITS.maxFileBytes} bytes per file`;
  const bytes = sized.bytes;
  const before = index < 0 ? 0 : exec.files[index].data.length;
  if (exec.fileBytes - before + bytes.length > LIMITS.maxTotalFileBytes) return `files.write: the files of a step may total at most ${LIMITS.maxTotalFileBytes} bytes`;
  const file = { name, mime, text: typeof data === 'string', data: bytes };
  if (index < 0) exec.files.push(file);
  else exec.files[index] = file; // writing a name again replaces the earlier file
  exec.fileBytes += bytes.length - before;
  return undefined;
}

function compile(code) {
  let script = scripts.get(code);
  if (script) {
    scripts.delete(code); // re-insert: the Map's order is the LRU order
  } else {
    script = new vm.Script(`__syGo(async function (ctx) {\n${code}\n})`, {
      filename: STEP_FILE,
      lineOffset: -1, // line 1 of the step's code is reported as line 1
      // import() must never reach Node's loader. The rejection value would be created here; it
      // never reaches the step: the attempt fails the step (see below), so its context is
      // never used again.
      importModuleDynamically: () => {
        if (current) current.imported = true;
        throw current && current.errorIn ? current.errorIn('import() is not available in code steps') : 'import() is not available';
      },
    });
    if (scripts.size >= SCRIPT_CACHE_SIZE) scripts.delete(scripts.keys().next().value);
  }
  scripts.set(code, script);
  return script;
}

function syntaxMessage(err) {
  const line = /^step\.js:(\d+)/.exec(String(err && err.stack));
  return `SyntaxError: ${err && err.message}${line ? ` (line ${line[1]})` : ''}`;
}

// Node creates the timeout error in the step's own realm, so it is read without invoking any
// accessor a step could have planted there (own data property only), and the clock decides
// when that property is not readable.
function isTimeout(err, startedAt, timeoutMs) {
  if (performance.now() - startedAt >= timeoutMs) return true;
  if (types.isProxy(err) || !types.isNativeError(err)) return false;
  const code = Object.getOwnPropertyDescriptor(err, 'code');
  return Boolean(code && code.value === 'ERR_SCRIPT_EXECUTION_TIMEOUT');
}

function run(msg, box) {
  const exec = { id: msg.id, state: undefined, files: [], fileBytes: 0, logLines: 0, logBytes: 0, logCut: false, imported: false, errorIn: box.errorIn };
  current = exec;
  try {
    let script;
    try {
      script = compile(msg.code);
    } catch (err) {
      return { outcome: 'invalid', message: syntaxMessage(err) };
    }
    box.arm(msg.data);
    const startedAt = performance.now();
    try {
      script.runInContext(box.context, { timeout: msg.timeoutMs, displayErrors: false });
    } catch (err) {
      if (isTimeout(err, startedAt, msg.timeoutMs)) return { outcome: 'timeout', message: `Step timed out after ${msg.timeoutMs} ms` };
      // Only code that breaks out of the function wrapper throws here; its value is not read.
      if (!exec.state) return { outcome: 'error', message: 'Error: the step code threw before it started' };
    }
    if (exec.imported) return { outcome: 'error', message: 'Error: import() is not available in code steps' };
    const state = exec.state;
    if (!state) return { outcome: 'error', message: 'Error: the step code did not run (it left its function wrapper)' };
    if (state.status === 'pending') {
      // No timers, I/O or host promises exist in the context: nothing can settle it any more.
      return { outcome: 'stalled', message: `Step timed out: it awaits a promise that can never settle (limit ${msg.timeoutMs} ms)` };
    }
    if (state.status === 'error') return { outcome: 'error', message: String(state.message) };
    const text = String(state.text);
    if (Buffer.byteLength(text) > LIMITS.maxResultBytes) {
      return { outcome: 'error', message: `Error: the step result is ${Buffer.byteLength(text)} bytes; the limit is ${LIMITS.maxResultBytes} bytes` };
    }
    return { outcome: 'ok', kind: String(state.kind), text, files: exec.files };
  } finally {
    current = null;
  }
}

/** The parent is trusted but checked: anything malformed ends this process (worker.ts). */
function validExec(m) {
  return m !== null && typeof m === 'object' && m.v === PROTOCOL && m.t === 'exec' && Number.isSafeInteger(m.id) &&
    typeof m.code === 'string' && typeof m.data === 'string' && typeof m.timeoutMs === 'number' && m.timeoutMs > 0 &&
    (m.key === undefined || (typeof m.key === 'string' && m.key.length > 0 && m.key.length <= MAX_KEY));
}

process.on('message', (msg) => {
  if (!validExec(msg)) {
    send({ v: PROTOCOL, t: 'error', message: 'unsupported message' });
    return;
  }
  const key = CONTEXTS > 0 ? msg.key : undefined;
  let box = key === undefined ? undefined : takeKept(key, msg.code);
  const reused = box !== undefined;
  if (!box) {
    box = spare || newContext();
    spare = null;
    if (key !== undefined && !box.snapshot) snapshot(box); // before the context's first user code
  }
  const reply = run(msg, box);
  if (typeof reply.message === 'string' && reply.message.length > MAX_MESSAGE) reply.message = `${reply.message.slice(0, MAX_MESSAGE)}…`;
  send({ v: PROTOCOL, t: 'done', id: msg.id, reused, ...reply });
  // Only a step that returned normally leaves a context to reuse: after an error, a timeout or
  // a promise that can never settle, the context is dropped.
  if (key !== undefined && reply.outcome === 'ok') keep(key, msg.code, box);
  // Prepare a fresh context while idle, after the reply is on its way.
  setImmediate(prepareSpare);
});

function prepareSpare() {
  if (spare) return;
  spare = newContext();
  if (CONTEXTS > 0) snapshot(spare);
}

// The service went away (crash, kill -9): nothing else would end this process.
process.on('disconnect', () => process.exit(0));
// A step may leave rejected promises nobody handles (in its own context). Node's default would
// end this process on the next tick, failing whichever step runs next.
process.on('unhandledRejection', () => undefined);

prepareSpare();
send({ v: PROTOCOL, t: 'ready' });
