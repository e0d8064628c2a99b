/**
 * What differs between the operator's modes (README.md in this folder): how the model drives
 * the page live, and how a replayed step that failed is re-inferred. `dom` and `hybrid` go step
 * by step — each step shows the model the page (URL, title, the accessibility snapshot with
 * element refs, capped, and in hybrid mode a screenshot) with the steps taken so far, and
 * performs the one action it calls; `cua` hands the page to the computer-use model (cua.ts).
 */
import type { ImagePart, TextPart } from 'ai';
import { describeStep, type ActionHost, type AgentMode } from './actions.js';
import { runCua } from './cua.js';
import type { CacheOutcome, Operation, OperatorOutcome, OperatorTask } from './run.js';

/** The snapshot the model sees is cut at this many characters (at a line end). */
export const SNAPSHOT_CHARS = 24_000;
/** An action of a live step waits this long for its element. */
export const LIVE_TIMEOUT_MS = 10_000;

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

export function taskText(t: OperatorTask): string {
  const files = t.uploads.length
    ? `\nFiles you can upload (upload tool): ${t.uploads.map((n) => JSON.stringify(n)).join(', ')}`
    : '';
  return `Task: ${t.task}${files}`;
}

/**
 * What differs between the modes: how the model drives the page live, and how a replayed step
 * that failed is re-inferred.
 */
export interface ModeStrategy {
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
export const stepwise: ModeStrategy = {
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
export const computerUse: ModeStrategy = {
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
