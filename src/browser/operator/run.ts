/**
 * The operator's task (README.md in this folder): one `Operation` holds what the task has done
 * so far, and the mode's strategy (modes.ts) drives the page. Live: each step shows the model
 * the page and performs the one action the model calls, until it calls `done` or `maxSteps`
 * model calls are spent. Replay (a cache entry): the recorded steps run again by their locators
 * with no model call; a step whose element is gone or no longer unique is re-inferred by the
 * mode's strategy (a heal) and the run goes on; if that fails too the rest of the task runs
 * live. The recorded result is brought up to date with what the replay read (reads.ts), or the
 * model answers again. Either way the steps that worked become the new entry.
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
import { computerUse, LIVE_TIMEOUT_MS, stepwise, taskText, type ModeStrategy } from './modes.js';
import { readPairs, refreshResult } from './reads.js';

/** A replayed step waits this long for its element before it is healed. */
const REPLAY_TIMEOUT_MS = 5_000;

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

/** What finished the task: the model's `done`, or a replay's result. */
interface Done {
  result: string;
  success: boolean;
}

/** One operator task: what it has done so far, shared by the mode's strategy and the replay. */
export class Operation {
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
