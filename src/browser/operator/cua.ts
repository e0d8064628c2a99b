/**
 * `agentMode: cua` (README.md in this folder): a computer-use model drives the page through
 * screenshots, mouse and keyboard — Anthropic's computer tool (`computer_20250124`, Claude
 * Sonnet 4 and its kin) through the AI SDK, the display being the task's viewport. Each action
 * is answered with a new screenshot. Clicks, typing, keys, scrolls and waits run through the
 * operator's own actions (actions.ts: click_at, type_text, press, scroll, wait), so a run is
 * recorded and replayed by the cache like any other; moves, drags and held keys run directly
 * and make the run uncacheable.
 */
import { anthropic } from '@ai-sdk/anthropic';
import { generateText, hasToolCall, stepCountIs, type ModelMessage, type ToolSet } from 'ai';
import {
  actionTools,
  MAX_OUTPUT_TOKENS,
  perform,
  type ActionHost,
  type ActionName,
  type RecordedStep,
} from './actions.js';

/** The computer tool's actions (computer_20250124). */
interface ComputerInput {
  action:
    | 'key'
    | 'hold_key'
    | 'type'
    | 'cursor_position'
    | 'mouse_move'
    | 'left_mouse_down'
    | 'left_mouse_up'
    | 'left_click'
    | 'left_click_drag'
    | 'right_click'
    | 'middle_click'
    | 'double_click'
    | 'triple_click'
    | 'scroll'
    | 'wait'
    | 'screenshot';
  coordinate?: [number, number];
  duration?: number;
  scroll_amount?: number;
  scroll_direction?: 'up' | 'down' | 'left' | 'right';
  start_coordinate?: [number, number];
  text?: string;
}

interface ComputerOutput {
  note: string;
  /** A PNG screenshot of the viewport after the action, base64. */
  screenshot?: string | undefined;
}

/** xdotool-style key names, as computer-use models write them, to Playwright's. */
const KEYS: Record<string, string> = {
  return: 'Enter',
  enter: 'Enter',
  kp_enter: 'Enter',
  esc: 'Escape',
  escape: 'Escape',
  backspace: 'Backspace',
  tab: 'Tab',
  space: 'Space',
  delete: 'Delete',
  del: 'Delete',
  insert: 'Insert',
  up: 'ArrowUp',
  down: 'ArrowDown',
  left: 'ArrowLeft',
  right: 'ArrowRight',
  page_up: 'PageUp',
  pageup: 'PageUp',
  prior: 'PageUp',
  page_down: 'PageDown',
  pagedown: 'PageDown',
  next: 'PageDown',
  home: 'Home',
  end: 'End',
  ctrl: 'Control',
  control: 'Control',
  alt: 'Alt',
  shift: 'Shift',
  super: 'Meta',
  cmd: 'Meta',
  command: 'Meta',
  meta: 'Meta',
  win: 'Meta',
};

export function playwrightKey(combo: string): string {
  return combo
    .split('+')
    .map((k) => k.trim())
    .filter(Boolean)
    .map(
      (k) =>
        KEYS[k.toLowerCase()] ??
        (k.length === 1 ? k : /^f\d{1,2}$/i.test(k) ? k.toUpperCase() : `${k[0]!.toUpperCase()}${k.slice(1)}`),
    )
    .join('+');
}

export interface CuaRun {
  /** The model calls made. */
  calls: number;
  done?: { result: string; success: boolean } | undefined;
  /** False once an action ran that the cache cannot repeat. */
  cacheable: boolean;
}

/**
 * Runs the task with a computer-use model until it calls `done` or `maxCalls` model calls are
 * spent; every recorded action is appended to `steps`.
 */
export async function runCua(o: {
  model: Parameters<typeof generateText>[0]['model'];
  system: string;
  prompt: string;
  host: ActionHost;
  maxCalls: number;
  signal: AbortSignal;
  steps: RecordedStep[];
  log(line: string): void;
  status(message: string): void;
}): Promise<CuaRun> {
  const { host } = o;
  let cacheable = true;
  let n = 0;
  const shot = async () => (await host.page().screenshot({ type: 'png', timeout: 10_000 })).toString('base64');
  const ours = async (action: ActionName, args: Record<string, unknown>): Promise<string> => {
    const outcome = await perform(host, action, args);
    o.steps.push(outcome.step);
    return outcome.note;
  };
  const at = (c: [number, number] | undefined): { x: number; y: number } => {
    if (!c) throw new Error('this action needs a coordinate');
    return { x: c[0], y: c[1] };
  };
  const direct = async (what: string, run: () => Promise<unknown>): Promise<string> => {
    cacheable = false;
    const since = Date.now();
    await run();
    await host.settle(since);
    return what;
  };

  const execute = async (input: ComputerInput): Promise<ComputerOutput> => {
    const page = host.page();
    n++;
    o.status(`Step ${n}: ${input.action}.`);
    let note: string;
    switch (input.action) {
      case 'screenshot':
        note = 'screenshot taken';
        break;
      case 'left_click':
        note = await ours('click_at', at(input.coordinate));
        break;
      case 'right_click':
      case 'middle_click':
        note = await ours('click_at', {
          ...at(input.coordinate),
          button: input.action === 'right_click' ? 'right' : 'middle',
        });
        break;
      case 'double_click':
      case 'triple_click':
        note = await ours('click_at', { ...at(input.coordinate), clicks: input.action === 'double_click' ? 2 : 3 });
        break;
      case 'type':
        note = await ours('type_text', { text: input.text ?? '' });
        break;
      case 'key':
        note = await ours('press', { key: playwrightKey(input.text ?? '') });
        break;
      case 'scroll':
        note = await ours('scroll', {
          direction: input.scroll_direction ?? 'down',
          pixels: Math.max(1, Math.round((input.scroll_amount ?? 3) * 100)),
          ...(input.coordinate ? at(input.coordinate) : {}),
        });
        break;
      case 'wait':
        note = await ours('wait', { seconds: Math.min(10, Math.max(0.1, input.duration ?? 1)) });
        break;
      case 'mouse_move': {
        const { x, y } = at(input.coordinate);
        note = await direct(`moved the mouse to (${x}, ${y})`, () => page.mouse.move(x, y));
        break;
      }
      case 'left_click_drag': {
        const from = at(input.start_coordinate);
        const to = at(input.coordinate);
        note = await direct(`dragged from (${from.x}, ${from.y}) to (${to.x}, ${to.y})`, async () => {
          await page.mouse.move(from.x, from.y);
          await page.mouse.down();
          await page.mouse.move(to.x, to.y, { steps: 10 });
          await page.mouse.up();
        });
        break;
      }
      case 'left_mouse_down':
        note = await direct('pressed the left button', () => page.mouse.down());
        break;
      case 'left_mouse_up':
        note = await direct('released the left button', () => page.mouse.up());
        break;
      case 'hold_key': {
        const key = playwrightKey(input.text ?? '');
        note = await direct(`held ${key}`, async () => {
          await page.keyboard.down(key);
          await page.waitForTimeout(Math.min(10, input.duration ?? 1) * 1000);
          await page.keyboard.up(key);
        });
        break;
      }
      case 'cursor_position':
        note = 'the cursor position is not tracked; take a screenshot';
        break;
      default:
        throw new Error(`unknown computer action ${String((input as { action: unknown }).action)}`);
    }
    o.log(`step ${n}: ${note}`);
    return { note, screenshot: await shot() };
  };

  const computer = anthropic.tools.computer_20250124({
    displayWidthPx: host.viewport.width,
    displayHeightPx: host.viewport.height,
    execute: async (input: ComputerInput): Promise<ComputerOutput> => {
      try {
        return await execute(input);
      } catch (err) {
        const reason = (err as Error).message.split('\n')[0]!.slice(0, 300);
        o.log(`step ${n}: ${input.action} failed: ${reason}`);
        return { note: `FAILED: ${reason}`, screenshot: await shot().catch(() => undefined) };
      }
    },
    toModelOutput: ({ output }: { output: ComputerOutput }) =>
      output.screenshot
        ? {
            type: 'content',
            value: [
              { type: 'text', text: output.note },
              { type: 'image-data', data: output.screenshot, mediaType: 'image/png' },
            ],
          }
        : { type: 'text', value: output.note },
  });
  const tools: ToolSet = { computer, done: actionTools('dom').done! };
  const first = await shot();
  const messages: ModelMessage[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: o.prompt },
        { type: 'image', image: first, mediaType: 'image/png' },
      ],
    },
  ];
  const res = await generateText({
    model: o.model,
    system: o.system,
    messages,
    tools,
    maxRetries: 1,
    maxOutputTokens: MAX_OUTPUT_TOKENS,
    abortSignal: o.signal,
    stopWhen: [stepCountIs(Math.max(1, o.maxCalls)), hasToolCall('done')],
  });
  const call = res.steps.flatMap((s) => s.toolCalls).find((c) => c.toolName === 'done');
  const input = call?.input as { result?: unknown; success?: unknown } | undefined;
  return {
    calls: res.steps.length,
    cacheable,
    done: input
      ? { result: typeof input.result === 'string' ? input.result : '', success: input.success !== false }
      : undefined,
  };
}
