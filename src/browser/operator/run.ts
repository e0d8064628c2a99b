/**
 * The operator's loop (README.md in this folder). Live: each step shows the model the page —
 * URL, title, the accessibility snapshot with element refs (capped), and in hybrid mode a
 * screenshot — with the steps taken so far, and performs the one action the model calls, until
 * it calls `done` or `maxSteps` model calls are spent. Replay (a cache entry): the recorded
 * steps run again by their locators with no model call; a step whose element is gone or no
 * longer unique is re-inferred by one model call (a heal) and the run goes on; if that fails too
 * the rest of the task runs live. Either way the steps that worked become the new entry.
 */
import { createHash } from 'node:crypto';
import { generateText, type ImagePart, type LanguageModel, type ModelMessage, type TextPart, type ToolSet } from 'ai';
import {
  actionTools,
  describeStep,
  MAX_OUTPUT_TOKENS,
  perform,
  replayable,
  type ActionHost,
  type ActionName,
  type ActionOutcome,
  type AgentMode,
  type RecordedStep,
  type Target,
} from './actions.js';
import type { CacheEntry } from './cache.js';
import { runCua } from './cua.js';

/** The snapshot the model sees is cut at this many characters (at a line end). */
export const SNAPSHOT_CHARS = 24_000;
/** A replayed step waits this long for its element before it is healed. */
const REPLAY_TIMEOUT_MS = 5_000;
const LIVE_TIMEOUT_MS = 10_000;

export type CacheOutcome = 'HIT' | 'MISS' | 'HEALED';

export interface OperatorTask {
  task: string;
  systemPrompt?: string | undefined;
  mode: AgentMode;
  maxSteps: number;
  startUrl: string | null;
  /** Names of the files the task may upload (filesToUpload). */
  uploads: string[];
  /** The cache entry to replay, when there is a live one. */
  cached?: CacheEntry | undefined;
}

export interface OperatorEnv {
  model: LanguageModel;
  host: ActionHost;
  signal: AbortSignal;
  log(line: string): void;
  /** The task's `message` while it runs. */
  status(message: string): void;
}

export interface OperatorOutcome {
  ok: boolean;
  result: string;
  /** null: the run was not a cache candidate or ended without success. */
  cache: CacheOutcome | null;
  modelCalls: number;
  /** What to store: the steps of a successful run, all replayable. Absent when nothing should be written. */
  record?: Omit<CacheEntry, 'v'> | undefined;
  /** HEALED: what the model was asked to redo (changed steps, the result, or both). */
  healed?: string | undefined;
}

const SYSTEM = [
  "You operate a web browser to carry out the user's task.",
  'Each turn shows the current page: its URL, its title and an accessibility snapshot in which elements carry references like [ref=e5] (f1e3 for an element inside a frame).',
  'Call exactly one tool per turn. Name elements only by refs from the latest snapshot.',
  'To report text from the page, read it with extract first, then quote it in done.',
  'Call done with the result when the task is finished, or with success false when it cannot be done. Never invent page content.',
].join(' ');
const CUA = [
  "You operate a web browser through the computer tool: the display is the browser's viewport, and the page the task starts on is already open.",
  'Each action is answered with a screenshot. Call done with the result when the task is finished, or with success false when it cannot be done. Never invent page content.',
].join(' ');
const HYBRID =
  'A screenshot of the viewport comes with each turn; click_at and type_text act at viewport coordinates for what the snapshot does not show.';

function cap(snapshot: string): string {
  if (snapshot.length <= SNAPSHOT_CHARS) return snapshot;
  const cut = snapshot.lastIndexOf('\n', SNAPSHOT_CHARS);
  return `${snapshot.slice(0, cut > 0 ? cut : SNAPSHOT_CHARS)}\n- (snapshot cut at ${SNAPSHOT_CHARS} characters: scroll, or extract the part you need)`;
}

async function observe(host: ActionHost, mode: AgentMode): Promise<Array<TextPart | ImagePart>> {
  const page = host.page();
  await page.waitForLoadState('domcontentloaded', { timeout: 5_000 }).catch(() => undefined);
  let snapshot: string;
  try {
    snapshot = await page.ariaSnapshot({ mode: 'ai', boxes: mode === 'hybrid', timeout: 10_000 });
  } catch {
    // A page in the middle of navigating: once more when it has loaded.
    await page.waitForLoadState('load', { timeout: 5_000 }).catch(() => undefined);
    snapshot = await page
      .ariaSnapshot({ mode: 'ai', boxes: mode === 'hybrid', timeout: 10_000 })
      .catch((err: Error) => `(no snapshot: ${err.message.split('\n')[0]})`);
  }
  const title = await page.title().catch(() => '');
  const text = `Current page: ${page.url()}\nTitle: ${title}\nSnapshot:\n${cap(snapshot)}`;
  if (mode !== 'hybrid') return [{ type: 'text', text }];
  const shot = await page.screenshot({ type: 'jpeg', quality: 60, timeout: 10_000 }).catch(() => undefined);
  return shot
    ? [
        { type: 'text', text },
        { type: 'image', image: shot, mediaType: 'image/jpeg' },
      ]
    : [{ type: 'text', text }];
}

/**
 * What the page shows when the model answers, as a hash: its URL, title and accessibility
 * snapshot (frames and shadow roots included) without element refs, which number elements per
 * snapshot. A replay compares it with the recorded one when the result quotes no read.
 */
async function pageState(host: ActionHost): Promise<string> {
  const page = host.page();
  await page.waitForLoadState('domcontentloaded', { timeout: 5_000 }).catch(() => undefined);
  const snapshot = await page.ariaSnapshot({ mode: 'ai', timeout: 10_000 }).catch(() => '');
  const title = await page.title().catch(() => '');
  return createHash('sha256')
    .update(JSON.stringify([page.url(), title, snapshot.replace(/ \[ref=[^\]]*\]/g, '')]))
    .digest('hex');
}

function taskText(t: OperatorTask): string {
  const files = t.uploads.length
    ? `\nFiles you can upload (upload tool): ${t.uploads.map((n) => JSON.stringify(n)).join(', ')}`
    : '';
  return `Task: ${t.task}${files}`;
}

interface Choice {
  action: ActionName;
  args: Record<string, unknown>;
}

/** One model call: the action it chose, or the reason it chose none. */
async function choose(
  env: OperatorEnv,
  tools: ToolSet,
  system: string,
  messages: ModelMessage[],
): Promise<Choice | { error: string }> {
  const res = await generateText({
    model: env.model,
    system,
    messages,
    tools,
    toolChoice: 'required',
    maxRetries: 1,
    maxOutputTokens: MAX_OUTPUT_TOKENS,
    abortSignal: env.signal,
  });
  const call = res.toolCalls[0];
  if (!call) return { error: 'no tool was called (call exactly one tool)' };
  const invalid = call as unknown as { invalid?: boolean; error?: unknown };
  const why = String((invalid.error as Error | undefined)?.message ?? invalid.error ?? '')
    .split('\n')[0]!
    .slice(0, 300);
  if (!(call.toolName in tools))
    return { error: `there is no tool ${call.toolName} (${Object.keys(tools).join(', ')})` };
  if (invalid.invalid)
    return { error: `${call.toolName} was called with arguments that do not fit its schema: ${why}` };
  return { action: call.toolName as ActionName, args: (call.input ?? {}) as Record<string, unknown> };
}

function targetOf(args: Record<string, unknown>): Target | undefined {
  return typeof args.ref === 'string' ? { ref: args.ref } : undefined;
}

/**
 * A read of the recording and what the same extract read on the replay: the same element (or
 * the whole page) and file name, matched in order, so an element read before and after a click
 * pairs each read with its own. `now` is undefined when that extract did not run again.
 */
export interface ReadPair {
  recorded: string;
  now: string | undefined;
}

export function readPairs(before: RecordedStep[], after: RecordedStep[]): ReadPair[] {
  const key = (s: RecordedStep) => `${s.selector ?? ''}\u0000${String(s.args.fileName ?? '')}`;
  const fresh = new Map<string, string[]>();
  for (const s of after) {
    if (s.action !== 'extract' || s.read === undefined) continue;
    const list = fresh.get(key(s)) ?? [];
    list.push(s.read);
    fresh.set(key(s), list);
  }
  return before
    .filter((s) => s.action === 'extract' && s.read !== undefined)
    .map((s) => ({ recorded: s.read!, now: fresh.get(key(s))?.shift() }));
}

const WORD = /[\p{L}\p{N}]/u;

/**
 * Where `result` quotes `read` whole: occurrences that do not run on into a letter or digit on
 * either side, so a read "5" is not found inside "15".
 */
function quotedAt(result: string, read: string): number[] {
  const at: number[] = [];
  if (read.length === 0) return at;
  for (let i = result.indexOf(read); i !== -1; i = result.indexOf(read, i + read.length)) {
    const before = i > 0 && WORD.test(result[i - 1]!) && WORD.test(read[0]!);
    const after =
      i + read.length < result.length && WORD.test(result[i + read.length]!) && WORD.test(read[read.length - 1]!);
    if (!before && !after) at.push(i);
  }
  return at;
}

/**
 * The recorded result brought up to date with the replay's reads, or undefined when it cannot
 * be: a read that changed (or did not run again) and that the result does not quote whole was
 * turned into the answer in some other way ("The total is 99.50 EUR" from the page's text), so
 * only the model can answer again. A read the result quotes whole is replaced by the fresh text:
 * "report the confirmation" returns today's confirmation with no model call.
 */
export function refreshResult(result: string, pairs: ReadPair[]): string | undefined {
  const changed = pairs.filter((p) => p.now !== p.recorded);
  if (changed.some((p) => p.now === undefined || quotedAt(result, p.recorded).length === 0)) return undefined;
  // Replace the quoted places of every changed read at once, longest read first where they overlap.
  const spans: Array<{ at: number; length: number; text: string }> = [];
  for (const p of [...changed].sort((a, b) => b.recorded.length - a.recorded.length)) {
    for (const at of quotedAt(result, p.recorded)) {
      const end = at + p.recorded.length;
      if (spans.some((s) => at < s.at + s.length && s.at < end)) continue;
      spans.push({ at, length: p.recorded.length, text: p.now! });
    }
  }
  let out = '';
  let from = 0;
  for (const s of spans.sort((a, b) => a.at - b.at)) {
    out += result.slice(from, s.at) + s.text;
    from = s.at + s.length;
  }
  return out + result.slice(from);
}

/** What finished the task: the model's `done`, or a replay's result. */
interface Done {
  result: string;
  success: boolean;
}

/**
 * What differs between the modes: how the model drives the page live, and how a replayed step
 * that failed is re-inferred.
 */
interface ModeStrategy {
  /**
   * From the current page on, spending what is left of maxSteps. `lead`, when given, opens the
   * first request (why a replay hands over to the model).
   */
  live(op: Operation, cache: CacheOutcome, lead?: string): Promise<OperatorOutcome>;
  /**
   * Replayed step `i` failed with `reason` (a model call is left): the task's outcome when this
   * ends it, or undefined when the replay goes on with the next step.
   */
  heal(op: Operation, i: number, reason: string): Promise<OperatorOutcome | undefined>;
}

/** Snapshot modes (`dom`, `hybrid`): one model call per step, each choosing one action. */
const stepwise: ModeStrategy = {
  async live(op, cache, lead) {
    const { t, env } = op;
    let opening = lead ? `${lead}\n\n` : '';
    while (op.modelCalls < t.maxSteps) {
      env.signal.throwIfAborted();
      const n = op.history.length + 1;
      env.status(`Step ${n}: looking at the page.`);
      const view = await observe(op.host, t.mode);
      const progress = `${opening}${op.history.length ? `Steps so far:\n${op.history.join('\n')}\n\n` : ''}`;
      opening = '';
      const choice = await op.choose(progress ? [{ type: 'text', text: progress }, ...view] : view);
      if ('error' in choice) {
        op.history.push(`${n}. FAILED: ${choice.error}`);
        env.log(`step ${n}: the model's answer was not usable: ${choice.error}`);
        continue;
      }
      env.status(`Step ${n}: ${choice.action}.`);
      const outcome = await op.act(choice, n);
      if (outcome?.done) return op.finish(outcome.done, cache);
    }
    return op.spent('without finishing the task');
  },

  async heal(op, i, reason) {
    const recorded = op.t.cached!.steps;
    const n = op.history.length + 1;
    const plan = recorded
      .map((r, k) => `${k + 1}. ${describeStep(r)}${k < i ? ' (done)' : k === i ? ' (failed now)' : ''}`)
      .join('\n');
    const view = await observe(op.host, op.t.mode);
    const choice = await op.choose([
      {
        type: 'text',
        text: `This task is being repeated from a recording of an earlier run. Recorded steps:\n${plan}\n\nStep ${i + 1} cannot be repeated as recorded: ${reason}. Call the one tool that does what step ${i + 1} did, on the page as it is now.`,
      },
      ...view,
    ]);
    if ('error' in choice) {
      op.env.log(`step ${n}: the model's answer was not usable: ${choice.error}; going on live`);
      op.history.push(`${n}. FAILED: ${choice.error}`);
      return this.live(op, 'HEALED');
    }
    const outcome = await op.act(choice, n);
    if (!outcome) return this.live(op, 'HEALED');
    if (outcome.done) return op.finish(outcome.done, 'HEALED');
    return undefined;
  },
};

/** `cua`: the computer-use model drives the page until done; it is not asked for one step, it takes over. */
const computerUse: ModeStrategy = {
  async live(op, cache, lead) {
    const { t, env, history } = op;
    op.host.actionTimeoutMs = LIVE_TIMEOUT_MS;
    env.status('Step 1: looking at the page.');
    const progress = lead
      ? `\n\n${lead}\nSteps so far:\n${history.join('\n')}`
      : history.length
        ? `\n\nThis task was being repeated from a recording; these steps ran before it stopped matching the page:\n${history.join('\n')}`
        : '';
    const run = await runCua({
      model: env.model,
      system: op.system,
      prompt: `${taskText(t)}${progress}`,
      host: op.host,
      maxCalls: t.maxSteps - op.modelCalls,
      signal: env.signal,
      steps: op.steps,
      log: env.log,
      status: env.status,
    });
    op.modelCalls += run.calls;
    if (!run.cacheable) op.cacheable = false;
    if (run.done) return op.finish(run.done, cache);
    return op.spent('without finishing the task');
  },

  heal(op) {
    return this.live(op, 'HEALED');
  },
};

/** One operator task: what it has done so far, shared by the mode's strategy and the replay. */
class Operation {
  readonly tools: ToolSet;
  readonly system: string;
  readonly host: ActionHost;
  readonly strategy: ModeStrategy;
  /** The steps that worked, live or replayed: the new cache entry's steps. */
  readonly steps: RecordedStep[] = [];
  /** The steps as the model reads them ("n. action: note"). */
  readonly history: string[] = [];
  modelCalls = 0;
  /** A replayed step was re-inferred. */
  healed = false;
  /** The replay's result was made again by the model. */
  reanswered = false;
  /** No step so far rules out a cache entry (a screenshot does). */
  cacheable = true;

  constructor(
    readonly t: OperatorTask,
    readonly env: OperatorEnv,
  ) {
    this.tools = actionTools(t.mode);
    this.system = `${t.mode === 'cua' ? CUA : SYSTEM}${t.mode === 'hybrid' ? ` ${HYBRID}` : ''}${t.systemPrompt ? `\n\n${t.systemPrompt}` : ''}`;
    this.host = env.host;
    this.strategy = t.mode === 'cua' ? computerUse : stepwise;
  }

  async run(): Promise<OperatorOutcome> {
    if (this.t.startUrl) {
      this.host.actionTimeoutMs = LIVE_TIMEOUT_MS;
      const opened = await perform(this.host, 'goto', { url: this.t.startUrl });
      this.env.log(`start: ${opened.note}`);
    }
    if (!this.t.cached) return this.strategy.live(this, 'MISS');
    return this.replay(this.t.cached);
  }

  /** One model call (counted) with the task and `content`: the action it chose, or why none. */
  choose(content: Array<TextPart | ImagePart>): Promise<Choice | { error: string }> {
    this.modelCalls++;
    return choose(this.env, this.tools, this.system, [
      { role: 'user', content: taskText(this.t) },
      { role: 'user', content },
    ]);
  }

  /** Performs the model's choice as step `n`; undefined when it failed (the history says why). */
  async act(choice: Choice, n: number): Promise<ActionOutcome | undefined> {
    this.host.actionTimeoutMs = LIVE_TIMEOUT_MS;
    const label = `${choice.action}${typeof choice.args.ref === 'string' ? ` ${choice.args.ref}` : ''}`;
    try {
      const outcome = await perform(this.host, choice.action, choice.args, targetOf(choice.args));
      this.history.push(`${n}. ${label}: ${outcome.note}`);
      this.env.log(`step ${n}: ${outcome.note}`);
      if (!outcome.done) this.steps.push(outcome.step);
      if (choice.action === 'screenshot') this.cacheable = false;
      return outcome;
    } catch (err) {
      const reason = (err as Error).message.split('\n')[0]!.slice(0, 500);
      this.history.push(`${n}. ${label}: FAILED: ${reason}`);
      this.env.log(`step ${n}: ${label} failed: ${reason}`);
      return undefined;
    }
  }

  /** `view`: the page's state as the answer was made (pageState), when already taken. */
  async finish(done: Done, cache: CacheOutcome | null, view?: string): Promise<OperatorOutcome> {
    const { modelCalls } = this;
    if (!done.success)
      return { ok: false, result: done.result || 'The operator could not complete the task.', cache: null, modelCalls };
    // A HIT rewrites nothing, so it needs no look at the page.
    const written = this.cacheable && this.steps.every(replayable) && cache !== 'HIT';
    const record = written
      ? {
          startUrl: this.t.startUrl,
          steps: this.steps,
          result: done.result,
          view: view ?? (await pageState(this.host)),
        }
      : undefined;
    const redone = [
      this.healed && 'changed steps were re-inferred',
      this.reanswered && 'the result was made again from the changed page',
    ];
    const what = redone.filter((w): w is string => typeof w === 'string').join(' and ');
    return {
      ok: true,
      result: done.result,
      cache,
      modelCalls,
      record,
      ...(cache === 'HEALED' ? { healed: what } : {}),
    };
  }

  spent(when: string): OperatorOutcome {
    return {
      ok: false,
      result: `The operator used all ${this.t.maxSteps} steps (maxSteps) ${when}.`,
      cache: null,
      modelCalls: this.modelCalls,
    };
  }

  /** The recorded steps again by their locators; a failed one is healed by the mode's strategy. */
  private async replay(cached: CacheEntry): Promise<OperatorOutcome> {
    const { env, host } = this;
    const recorded = cached.steps;
    env.log(`cache: replaying ${recorded.length} recorded steps`);
    for (let i = 0; i < recorded.length; i++) {
      env.signal.throwIfAborted();
      const s = recorded[i]!;
      const n = this.history.length + 1;
      env.status(`Replaying step ${i + 1} of ${recorded.length}.`);
      host.actionTimeoutMs = REPLAY_TIMEOUT_MS;
      try {
        const outcome = await perform(
          host,
          s.action,
          s.args,
          s.selector !== undefined ? { selector: s.selector, target: s.target } : undefined,
        );
        this.steps.push(outcome.step);
        this.history.push(`${n}. ${describeStep(s)}: ${outcome.note}`);
        env.log(`step ${n} (replayed): ${outcome.note}`);
      } catch (err) {
        const reason = (err as Error).message.split('\n')[0]!.slice(0, 300);
        env.log(`step ${n} (replayed): ${describeStep(s)} failed: ${reason}; re-inferring this step`);
        this.healed = true;
        if (this.modelCalls >= this.t.maxSteps) break;
        const ended = await this.strategy.heal(this, i, reason);
        if (ended) return ended;
      }
    }
    if (this.healed && this.modelCalls >= this.t.maxSteps) return this.spent('while repairing the recorded steps');
    return this.replayed(cached);
  }

  /** The recorded steps have run again: the recorded result, brought up to date, or the model answers again. */
  private async replayed(cached: CacheEntry): Promise<OperatorOutcome> {
    const { env } = this;
    const pairs = readPairs(cached.steps, this.steps);
    const result = refreshResult(cached.result, pairs);
    // A result that quotes no read was made from the page as the model saw it: the page must be the same.
    const view = pairs.length === 0 && cached.view !== undefined ? await pageState(this.host) : undefined;
    if (view !== undefined && view !== cached.view) {
      env.log('cache: the page differs from the recording and the result quotes no read; asking the model to finish');
      return this.reanswer(
        `This task is being repeated from a recording of an earlier run. The recorded steps ran again, but the page now differs from the page the recorded result ${JSON.stringify(cached.result)} was made from, so it may be out of date; its form may guide you, never its content. Finish the task from the page as it is now: call done with the result (or take the steps still needed).`,
      );
    }
    if (result === undefined) {
      // The recorded answer was made from reads that say something else now: only the model can answer again.
      env.log(
        'cache: the page reads differently from the recording and the result does not quote those reads; asking the model to finish',
      );
      return this.reanswer(
        `This task is being repeated from a recording of an earlier run. The recorded steps ran again, but what they read differs from the recording, so the recorded result ${JSON.stringify(cached.result)} may be out of date; its form may guide you, never its content. Finish the task from what the steps read now and the page as it is now: call done with the result (or take the steps still needed).`,
      );
    }
    env.log(
      this.healed
        ? 'cache: replay finished after re-inferring changed steps'
        : 'cache: replay finished with no model call',
    );
    return this.finish({ result, success: true }, this.healed ? 'HEALED' : 'HIT', view);
  }

  /** The model finishes the task from the replayed page, led by `lead`, when a model call is left. */
  private reanswer(lead: string): Promise<OperatorOutcome> {
    if (this.modelCalls >= this.t.maxSteps)
      return Promise.resolve(this.spent('before the result could be made again from the changed page'));
    this.reanswered = true;
    return this.strategy.live(this, 'HEALED', lead);
  }
}

export async function operate(t: OperatorTask, env: OperatorEnv): Promise<OperatorOutcome> {
  return new Operation(t, env).run();
}
