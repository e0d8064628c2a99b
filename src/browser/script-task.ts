/**
 * One `playwright_run` task in a script runner process (src/browser/scripts.ts, README.md
 * "Script isolation"): its limits, sent to the runner and checked again here, and the task
 * itself (`ScriptTask`), from the message that starts it to the runner's `idle` that frees the
 * process for the next one.
 */
import { RUNNER_MESSAGE, RUNNER_PROTOCOL, type SupervisedRunner } from '../containment/index.js';

/** Version of the messages between the service and a runner (runner-common.cjs PROTOCOL, read by script-runner.cjs too). */
const SCRIPT_PROTOCOL = RUNNER_PROTOCOL.script;
const MiB = 1024 * 1024;
/**
 * A task's limits (src/browser/README.md). The runner gets the first five with each task and
 * enforces them there (a file over them fails inside the script); the parent checks them again.
 * `logChars` bounds the whole log, which the heartbeat rewrites every 5 s. `runnerRssMb` is the
 * watchdog's ceiling on the resident memory of the runner's whole contained tree: the heap, the
 * task's files (up to `totalBytes`, held in memory) and their copies in transit, and Node with
 * playwright-core loaded (about 100 MiB).
 */
export const SCRIPT_LIMITS = {
  files: 20,
  fileBytes: 25 * MiB,
  totalBytes: 100 * MiB,
  resultChars: 1024 * 1024,
  lineChars: 8 * 1024,
  heapMb: 256,
  logLines: 2000,
  logChars: 256 * 1024,
  runnerRssMb: 1024,
};
const RUNNER_LIMITS = {
  files: SCRIPT_LIMITS.files,
  fileBytes: SCRIPT_LIMITS.fileBytes,
  totalBytes: SCRIPT_LIMITS.totalBytes,
  resultChars: SCRIPT_LIMITS.resultChars,
  lineChars: SCRIPT_LIMITS.lineChars,
};

export interface ScriptFile {
  fileName: string;
  data: Buffer;
  /**
   * script: returned by a script; download: a download of the browser; extract: made by the
   * operator (extract, screenshot, the session trace).
   */
  source: 'script' | 'download' | 'extract';
  mimeType?: string | undefined;
}

export interface ScriptOutcome {
  ok: boolean;
  /** The script's return value as text (ok) or the reason it failed. */
  result: string;
  files: ScriptFile[];
}

export interface ScriptRun {
  /** The relay endpoint, as the runner connects to it (src/browser/relay.ts RelayEndpoint.url). */
  wsEndpoint: string;
  /** The organisation's relay socket folder, bound into the runner's view (Unix socket relays only). */
  relaySocketDir?: string | undefined;
  code: string;
  viewport: { width: number; height: number };
  storageState?: unknown;
  /** The guarded proxy every context of the task uses (src/browser/proxy.ts). */
  proxyUrl: string;
  timeoutMs: number;
  /**
   * The task's whole time limit (BROWSER_TASK_TIMEOUT_MS), named in the message when the script
   * overruns; timeoutMs is what is left of it.
   */
  taskLimitMs: number;
  /** The task's start (epoch ms): the log's clock. */
  startedAt: number;
  signal: AbortSignal;
  onLog(line: string): void;
}

function checkedFiles(raw: unknown): ScriptFile[] {
  if (!Array.isArray(raw)) return [];
  const files: ScriptFile[] = [];
  let total = 0;
  for (const f of raw.slice(0, SCRIPT_LIMITS.files) as Array<Record<string, unknown>>) {
    if (!f || typeof f.fileName !== 'string' || !(f.data instanceof Uint8Array)) continue;
    const data = Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    if (data.length > SCRIPT_LIMITS.fileBytes || total + data.length > SCRIPT_LIMITS.totalBytes) continue;
    total += data.length;
    files.push({
      fileName: f.fileName.slice(0, 255),
      data,
      source: f.source === 'download' ? 'download' : 'script',
      mimeType: typeof f.mimeType === 'string' ? f.mimeType.slice(0, 255) : undefined,
    });
  }
  return files;
}

export interface Runner {
  /** The process, started and watched by src/containment's supervisor. */
  proc: SupervisedRunner;
  /** Tasks this process has been given. */
  tasks: number;
  /** Resolves once the runner said it is ready and runs as its own user; false when it never will. */
  ready: Promise<boolean>;
  /** Why the process was stopped (the watchdog, a failed start, a retirement), if it was. */
  stopped: string | undefined;
}

/** Kills the whole contained tree; the task it runs fails with `why` (ended() reads it). */
export function stop(runner: Runner, why: string): void {
  runner.stopped ??= why;
  runner.proc.kill();
}

/** The viewport of a task that names none (spec section 12 defaults). */
export const DEFAULT_VIEWPORT = { width: 1288, height: 711 };

export const alive = (r: Runner) => r.proc.alive;

let nextTask = 1;

/**
 * One task in a runner, in three states:
 * - `running`: the task is sent once the runner is ready; its log lines are taken (bounded) and
 *   its `done` message gives the outcome;
 * - `closing`: the outcome is in; the runner closes the task's context and opens the next one,
 *   and says `idle` within 10 s (a process that is not reused never gets here: it is stopped);
 * - `ended`: its timers and listeners are gone, and `ready` says whether the process may take
 *   another task: true after `idle`, false after the time limit, an abort, a crash, or no
 *   `idle` in time (the process is then stopped).
 */
class ScriptTask {
  private state: 'running' | 'closing' | 'ended' = 'running';
  private readonly reuse: boolean;
  private readonly n = nextTask++;
  private outcome: ScriptOutcome | undefined;
  private lines = 0;
  private chars = 0;
  private readonly deadline: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  private offExit: () => void = () => undefined;
  private reported!: (outcome: ScriptOutcome) => void;
  private markReady!: (ok: boolean) => void;
  /** Resolves as soon as the outcome is known. */
  readonly result = new Promise<ScriptOutcome>((resolve) => {
    this.reported = resolve;
  });
  readonly ready = new Promise<boolean>((resolve) => {
    this.markReady = resolve;
  });

  constructor(
    private readonly runner: Runner,
    private readonly run: ScriptRun,
    { reuse }: { reuse: boolean },
  ) {
    this.reuse = reuse;
    this.deadline = setTimeout(
      () =>
        this.fail({
          ok: false,
          result: `The script did not finish within the task's time limit (${Math.round(run.taskLimitMs / 1000)} s) and was stopped.`,
          files: [],
        }),
      run.timeoutMs,
    );
    run.signal.addEventListener('abort', this.aborted, { once: true });
    const { proc } = runner;
    if (!alive(runner)) {
      this.ended(proc.child.exitCode, proc.child.signalCode);
      return;
    }
    proc.child.on('message', this.onMessage);
    this.offExit = proc.onExit(this.ended);
    proc.busy = true;
    // A new runner first loads playwright-core and switches users; one that fails to is stopped (ended() says why).
    void runner.ready.then((ok) => {
      if (ok && this.state === 'running' && alive(runner)) this.send();
    });
  }

  private send(): void {
    const { run } = this;
    this.runner.proc.child.send({
      v: SCRIPT_PROTOCOL,
      t: RUNNER_MESSAGE.run,
      task: this.n,
      reuse: this.reuse,
      defaultViewport: DEFAULT_VIEWPORT,
      startedAt: run.startedAt,
      wsEndpoint: run.wsEndpoint,
      code: run.code,
      viewport: run.viewport,
      storageState: run.storageState,
      proxy: run.proxyUrl,
      limits: RUNNER_LIMITS,
    });
  }

  private readonly onMessage = (msg: Record<string, unknown>) => {
    if (msg?.v !== SCRIPT_PROTOCOL || msg.task !== this.n) return;
    if (this.state === 'running' && msg.t === RUNNER_MESSAGE.log && typeof msg.line === 'string') this.log(msg.line);
    else if (this.state === 'running' && msg.t === RUNNER_MESSAGE.done) this.done(msg);
    else if (this.state === 'closing' && msg.t === RUNNER_MESSAGE.idle) {
      this.end();
      this.markReady(true);
    }
  };

  /** A line of the script's log, within the log's bounds; past them, one line says the rest was dropped. */
  private log(raw: string): void {
    const line = raw.slice(0, SCRIPT_LIMITS.lineChars);
    this.chars += line.length + 1;
    if (++this.lines <= SCRIPT_LIMITS.logLines && this.chars <= SCRIPT_LIMITS.logChars) this.run.onLog(line);
    else if (this.lines !== Infinity) {
      this.run.onLog('[log truncated: further lines dropped]');
      this.lines = Infinity;
    }
  }

  /** The runner's `done`: the outcome, checked again here; a process that is not reused is stopped with it. */
  private done(msg: Record<string, unknown>): void {
    const files = checkedFiles(msg.files);
    const said = msg.ok ? msg.result : msg.error;
    const text = typeof said === 'string' ? said.slice(0, SCRIPT_LIMITS.resultChars) : '';
    const o: ScriptOutcome =
      msg.ok === true ? { ok: true, result: text, files } : { ok: false, result: text || 'The script failed.', files };
    if (!this.reuse) {
      this.fail(o);
      return;
    }
    clearTimeout(this.deadline);
    this.runner.proc.busy = false;
    this.report(o);
    this.state = 'closing';
    this.idleTimer = setTimeout(() => this.fail(o), 10_000);
  }

  private readonly aborted = () =>
    this.fail({
      ok: false,
      result: 'The task was stopped before the script finished (the service is shutting down).',
      files: [],
    });

  /** The process exited: the task fails with why (a stop of ours, its heap, or a crash). */
  private readonly ended = (code: number | null, sig: NodeJS.Signals | null) => {
    const { runner } = this;
    const heap = /heap out of memory|Allocation failed/i.test(runner.proc.stderr);
    const why = runner.stopped
      ? `The script was stopped: its process ${runner.stopped}.`
      : heap
        ? `The script ran out of memory (limit ${SCRIPT_LIMITS.heapMb} MB of heap).`
        : `The script's process ended unexpectedly (${sig ?? `exit code ${code}`}).`;
    this.fail({ ok: false, result: why, files: [] });
  };

  private report(o: ScriptOutcome): void {
    if (this.outcome) return;
    this.outcome = o;
    this.reported(o);
  }

  /** Ends the task as failed (unless its outcome is already in) and the process with it. */
  private fail(o: ScriptOutcome): void {
    this.end();
    this.report(o);
    if (alive(this.runner)) stop(this.runner, 'was stopped with its task');
    this.markReady(false);
  }

  private end(): void {
    this.state = 'ended';
    const { proc } = this.runner;
    if (proc.busy) proc.busy = false;
    clearTimeout(this.deadline);
    clearTimeout(this.idleTimer);
    this.run.signal.removeEventListener('abort', this.aborted);
    proc.child.off('message', this.onMessage);
    this.offExit();
  }
}

/**
 * One task in a runner (ScriptTask). Resolves with the outcome as soon as it is known, and
 * `ready`, which says whether the process may take another task.
 */
export async function runIn(
  runner: Runner,
  run: ScriptRun,
  { reuse }: { reuse: boolean },
): Promise<{ outcome: ScriptOutcome; ready: Promise<boolean> }> {
  const task = new ScriptTask(runner, run, { reuse });
  return { outcome: await task.result, ready: task.ready };
}
