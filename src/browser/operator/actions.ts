/**
 * What the operator can do in the browser (README.md in this folder): the tools the model is
 * offered, each with a JSON Schema, and their execution on a Playwright page. Elements are
 * named by the refs of the latest accessibility snapshot (`e5`, `f1e3` inside frames, through
 * open shadow roots); an action on an element resolves the ref to a resilient locator
 * (`locator.normalize()`: role and name, label, text, test id, with frame hops), and that
 * locator — not the ref, which lives only as long as its snapshot — is what the action cache
 * records and replays.
 */
import { jsonSchema, tool, type JSONSchema7, type ToolSet } from 'ai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Locator, Page } from 'playwright-core';
import { navigationRefusal } from '../urls.js';

export type AgentMode = 'dom' | 'hybrid' | 'cua';

export type ActionName =
  | 'goto'
  | 'back'
  | 'click'
  | 'fill'
  | 'select'
  | 'check'
  | 'press'
  | 'upload'
  | 'scroll'
  | 'wait'
  | 'extract'
  | 'screenshot'
  | 'click_at'
  | 'type_text'
  | 'done';

/** One step as the cache holds it: the action, its arguments without the ref, and the element's locator. */
export interface RecordedStep {
  action: ActionName;
  args: Record<string, unknown>;
  /**
   * Playwright's selector of the element (`internal:role=button[name="Save"i]`, frame hops as `>>
   * internal:control=enter-frame >>`).
   */
  selector?: string;
  /** The element as the log names it, e.g. `button "Save"`. */
  target?: string;
  /** extract: the text read when the step was recorded (the result quotes it; a replay substitutes the fresh text). */
  read?: string;
  /** fill: the element is a password field (the generated replay script leaves the text out). */
  secret?: boolean;
}

/** A file the caller listed in `filesToUpload`, fetched before the task starts. */
export interface UploadFile {
  name: string;
  mimeType: string;
  buffer: Buffer;
}

export interface ActionHost {
  page(): Page;
  viewport: { width: number; height: number };
  uploads: Map<string, UploadFile>;
  saveFile(fileName: string, data: Buffer, mimeType: string): Promise<void>;
  /** Element actions wait this long for their element (live: the page may still be loading; replay: shorter). */
  actionTimeoutMs: number;
  /**
   * After an action begun at `since` (epoch ms): until the requests it caused have gone quiet
   * (bounded), so the next look sees their effect.
   */
  settle(since: number): Promise<void>;
}

/** Actions after which the page may still be changing. */
const CHANGES_PAGE = new Set<ActionName>([
  'goto',
  'back',
  'click',
  'fill',
  'select',
  'check',
  'press',
  'upload',
  'click_at',
  'type_text',
]);

export interface ActionOutcome {
  /** What the model is told and the log shows, e.g. `clicked button "Submit"`. */
  note: string;
  step: RecordedStep;
  /** done: the task's result and whether it succeeded. */
  done?: { result: string; success: boolean };
}

export const MAX_EXTRACT_CHARS = 8_000;
/** One step is one tool call: a model's answer never needs more. */
export const MAX_OUTPUT_TOKENS = 4_096;
const MAX_WAIT_SECONDS = 10;

const ref = {
  type: 'string',
  pattern: '^(f\\d+)?e\\d+$',
  description: 'Element reference from the latest snapshot, e.g. e12 or f1e3.',
} as const;
const fileName = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^/\\\\\\x00-\\x1f]+$' } as const;

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);

/**
 * A tool of the operator. Its arguments are checked against its schema (the AI SDK does not
 * check a plain JSON Schema): a call that does not fit is an invalid call, and the model is told
 * what is wrong.
 */
function def(description: string, properties: Record<string, object>, required: string[] = []) {
  const schema = {
    type: 'object',
    properties: properties as Record<string, JSONSchema7>,
    required,
    additionalProperties: false,
  } as const;
  const check = ajv.compile(schema);
  return tool({
    description,
    inputSchema: jsonSchema<Record<string, unknown>>(schema, {
      validate: (value) =>
        check(value)
          ? { success: true, value: value as Record<string, unknown> }
          : {
              success: false,
              error: new Error(
                (check.errors ?? [])
                  .map((e) => `${e.instancePath || 'arguments'} ${e.message ?? 'is invalid'}`)
                  .join('; '),
              ),
            },
    }),
  });
}

/** The tools the model may call in a mode (one per turn). */
export function actionTools(mode: AgentMode): ToolSet {
  const tools: ToolSet = {
    goto: def(
      'Open a URL in the current tab.',
      { url: { type: 'string', format: 'uri', description: 'Absolute http(s) URL.' } },
      ['url'],
    ),
    back: def('Go back to the previous page.', {}),
    click: def('Click an element.', { ref }, ['ref']),
    fill: def(
      'Replace the text of an input, text area or editable element; submit presses Enter after typing.',
      { ref, text: { type: 'string', maxLength: 10_000 }, submit: { type: 'boolean' } },
      ['ref', 'text'],
    ),
    select: def(
      'Choose options of a select element by their labels or values.',
      { ref, values: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 50 } },
      ['ref', 'values'],
    ),
    check: def('Check or uncheck a checkbox or radio button.', { ref, checked: { type: 'boolean' } }, [
      'ref',
      'checked',
    ]),
    press: def(
      'Press a key or combination (Enter, Tab, Escape, ArrowDown, Control+A …), on an element when a ref is given.',
      { key: { type: 'string', minLength: 1, maxLength: 50 }, ref },
      ['key'],
    ),
    upload: def(
      "Set files from the task's files to upload on a file input.",
      { ref, fileNames: { type: 'array', items: fileName, minItems: 1, maxItems: 20 } },
      ['ref', 'fileNames'],
    ),
    scroll: def(
      'Scroll the page by most of a screen (or by pixels), at a point of the viewport when x and y are given.',
      {
        direction: { type: 'string', enum: ['up', 'down', 'left', 'right'] },
        pixels: { type: 'integer', minimum: 1, maximum: 20_000 },
        x: { type: 'number', minimum: 0 },
        y: { type: 'number', minimum: 0 },
      },
      ['direction'],
    ),
    wait: def(
      `Wait for the page to change, up to ${MAX_WAIT_SECONDS} seconds.`,
      { seconds: { type: 'number', minimum: 0.1, maximum: MAX_WAIT_SECONDS } },
      ['seconds'],
    ),
    extract: def(
      `Read the text of an element (or of the whole page without a ref), up to ${MAX_EXTRACT_CHARS} characters; with fileName it is also saved as a file of the task.`,
      { ref, fileName },
    ),
    screenshot: def('Save a PNG screenshot of the page as a file of the task.', {
      fileName,
      fullPage: { type: 'boolean' },
    }),
    done: def(
      'Finish the task: result is the answer (quote text you read with extract); success false when the task cannot be done.',
      { result: { type: 'string', maxLength: 100_000 }, success: { type: 'boolean' } },
      ['result'],
    ),
  };
  if (mode === 'hybrid') {
    tools.click_at = def(
      "Click at a point of the viewport (CSS pixels, from the screenshot or the snapshot's [box=x,y,w,h]).",
      {
        x: { type: 'number', minimum: 0 },
        y: { type: 'number', minimum: 0 },
        button: { type: 'string', enum: ['left', 'right', 'middle'] },
        clicks: { type: 'integer', minimum: 1, maximum: 3 },
      },
      ['x', 'y'],
    );
    tools.type_text = def(
      'Type text with the keyboard into whatever has the focus.',
      { text: { type: 'string', maxLength: 10_000 } },
      ['text'],
    );
  }
  return tools;
}

/** Locator internals: the selector string a locator stands for (stable across the 1.x releases we pin). */
function selectorOf(locator: Locator): string | undefined {
  const s = (locator as unknown as { _selector?: unknown })._selector;
  return typeof s === 'string' && s.length > 0 && s.length <= 2000 ? s : undefined;
}

function quote(text: string, max = 200): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(one.length > max ? `${one.slice(0, max)}…` : one);
}

/** An element named by a ref (live) or by a recorded selector (replay). */
export type Target = { ref: string } | { selector: string; target?: string | undefined };

interface Resolved {
  locator: Locator;
  selector?: string | undefined;
  target: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any --
   runs in the page, and the service is compiled without DOM types */
/** Runs in the page: the element's structural CSS path. */
function structuralPath(el: any): string {
  const g = globalThis as any;
  const parts: string[] = [];
  let node = el;
  while (node) {
    const root = node.getRootNode();
    const id: string = node.id;
    if (id && /^[A-Za-z][\w-]*$/.test(id) && root.querySelectorAll(`#${id}`).length === 1) {
      parts.unshift(`#${id}`);
      if (root instanceof g.Document) break;
    } else {
      let k = 1;
      for (let sib = node.previousElementSibling; sib; sib = sib.previousElementSibling)
        if (sib.tagName === node.tagName) k++;
      parts.unshift(`${String(node.tagName).toLowerCase()}:nth-of-type(${k})`);
    }
    if (node.parentElement) {
      if (!parts[0]!.startsWith('#')) parts[0] = `> ${parts[0]}`;
      node = node.parentElement;
    } else if (root instanceof g.ShadowRoot) {
      node = root.host;
    } else {
      break;
    }
  }
  return parts.join(' ').replace(/^> /, '');
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * A selector of the element by its place in the page, not its text: `#id` when the id is unique
 * in its root, else a chain of `tag:nth-of-type(k)` (Playwright's CSS crosses open shadow roots
 * by descendant combinators). For reads, whose text is what changes between runs.
 */
async function structuralSelector(locator: Locator, normalized: string | undefined): Promise<string | undefined> {
  const css = await locator.evaluate(structuralPath).catch(() => undefined);
  if (!css) return undefined;
  // Keep the frame hops of the normalized selector: the path is inside the element's own frame.
  const hop = ' >> internal:control=enter-frame >> ';
  const frames = normalized?.includes(hop) ? normalized.slice(0, normalized.lastIndexOf(hop) + hop.length) : '';
  return `${frames}css=${css}`;
}

async function resolve(
  host: ActionHost,
  t: Target,
  { forRead = false }: { forRead?: boolean } = {},
): Promise<Resolved> {
  const page = host.page();
  if ('selector' in t) {
    const locator = page.locator(t.selector);
    // A recorded element must be there, and only once: otherwise the step is re-inferred (healed).
    await locator.first().waitFor({ state: 'attached', timeout: host.actionTimeoutMs });
    const n = await locator.count();
    if (n !== 1) throw new Error(`${t.target ?? t.selector} matches ${n} elements now`);
    return { locator, selector: t.selector, target: t.target ?? t.selector };
  }
  const byRef = page.getByRef(t.ref);
  if ((await byRef.count()) === 0) throw new Error(`no element ${t.ref} in the latest snapshot (use a ref from it)`);
  let selector: string | undefined;
  let target = t.ref;
  try {
    const normal = await byRef.normalize();
    selector = selectorOf(normal);
    target = normal.toString().replace(/^locator\((.*)\)$/, '$1');
  } catch {
    // An element with no stable description still works live; the run just cannot be cached.
  }
  if (forRead) selector = (await structuralSelector(byRef, selector)) ?? selector;
  return { locator: byRef, selector, target };
}

/** A coordinate of the viewport, or a reason the model can act on. */
function inside(v: unknown, max: number): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > max)
    throw new Error(`${String(v)} is outside the viewport (0 to ${max} CSS pixels)`);
  return n;
}

function str(v: unknown, name: string): string {
  if (typeof v !== 'string') throw new Error(`${name} must be a string`);
  return v;
}

/**
 * Performs one action. Throws with a reason the model can act on (it is told and tries
 * something else); never for a `done`.
 */
export async function perform(
  host: ActionHost,
  action: ActionName,
  args: Record<string, unknown>,
  t?: Target,
): Promise<ActionOutcome> {
  const since = Date.now();
  const outcome = await act(host, action, args, t);
  if (CHANGES_PAGE.has(action)) await host.settle(since);
  return outcome;
}

async function act(
  host: ActionHost,
  action: ActionName,
  args: Record<string, unknown>,
  t?: Target,
): Promise<ActionOutcome> {
  const page = host.page();
  const timeout = host.actionTimeoutMs;
  const { ref: _ref, ...plain } = args;
  const element = async () => {
    if (!t) throw new Error(`${action} needs a ref`);
    return resolve(host, t, { forRead: action === 'extract' });
  };
  const step = (r?: Resolved, extra: Partial<RecordedStep> = {}): RecordedStep => ({
    action,
    args: plain,
    ...(r ? { selector: r.selector, target: r.target } : {}),
    ...extra,
  });
  switch (action) {
    case 'goto': {
      const url = str(args.url, 'url');
      // The model is told why, and the log shows it (src/browser/urls.ts).
      const refused = navigationRefusal(url);
      if (refused) throw new Error(refused);
      if (!/^https?:\/\//i.test(url)) throw new Error('goto needs an absolute http(s) URL');
      const res = await page.goto(url, { timeout: Math.max(timeout, 15_000), waitUntil: 'domcontentloaded' });
      return { note: `opened ${url}${res && res.status() >= 400 ? ` (HTTP ${res.status()})` : ''}`, step: step() };
    }
    case 'back':
      await page.goBack({ timeout, waitUntil: 'domcontentloaded' });
      return { note: 'went back', step: step() };
    case 'click': {
      const r = await element();
      await r.locator.click({ timeout });
      return { note: `clicked ${r.target}`, step: step(r) };
    }
    case 'fill': {
      const r = await element();
      const secret =
        (await r.locator.getAttribute('type', { timeout }).catch(() => null))?.toLowerCase() === 'password';
      await r.locator.fill(str(args.text, 'text'), { timeout });
      if (args.submit === true) await r.locator.press('Enter', { timeout });
      return {
        note: `filled ${r.target}${args.submit === true ? ' and pressed Enter' : ''}`,
        step: step(r, secret ? { secret: true } : {}),
      };
    }
    case 'select': {
      const r = await element();
      const values = (args.values as unknown[]).map((v) => str(v, 'values[]'));
      const chosen = await r.locator
        .selectOption(
          values.map((v) => ({ label: v })),
          { timeout },
        )
        .catch(() => r.locator.selectOption(values, { timeout }));
      return { note: `selected ${chosen.join(', ')} in ${r.target}`, step: step(r) };
    }
    case 'check': {
      const r = await element();
      await r.locator.setChecked(args.checked === true, { timeout });
      return { note: `${args.checked === true ? 'checked' : 'unchecked'} ${r.target}`, step: step(r) };
    }
    case 'press': {
      const key = str(args.key, 'key');
      if (t) {
        const r = await element();
        await r.locator.press(key, { timeout });
        return { note: `pressed ${key} on ${r.target}`, step: step(r) };
      }
      await page.keyboard.press(key);
      return { note: `pressed ${key}`, step: step() };
    }
    case 'upload': {
      const r = await element();
      const names = (args.fileNames as unknown[]).map((v) => str(v, 'fileNames[]'));
      const files = names.map((n) => {
        const f = host.uploads.get(n);
        if (!f)
          throw new Error(
            `no file ${quote(n)} among the task's files to upload (${[...host.uploads.keys()].map((k) => quote(k)).join(', ') || 'none'})`,
          );
        return f;
      });
      await r.locator.setInputFiles(files, { timeout });
      return { note: `set ${names.join(', ')} on ${r.target}`, step: step(r) };
    }
    case 'scroll': {
      const dir = ['up', 'down', 'left', 'right'].includes(String(args.direction)) ? String(args.direction) : 'down';
      const horizontal = dir === 'left' || dir === 'right';
      const px =
        typeof args.pixels === 'number'
          ? args.pixels
          : Math.round((horizontal ? host.viewport.width : host.viewport.height) * 0.8);
      const sign = dir === 'up' || dir === 'left' ? -1 : 1;
      if (typeof args.x === 'number' && typeof args.y === 'number')
        await page.mouse.move(inside(args.x, host.viewport.width), inside(args.y, host.viewport.height));
      await page.mouse.wheel(horizontal ? sign * px : 0, horizontal ? 0 : sign * px);
      return { note: `scrolled ${dir}${typeof args.pixels === 'number' ? ` ${px} px` : ''}`, step: step() };
    }
    case 'wait': {
      const s = Math.min(MAX_WAIT_SECONDS, Math.max(0.1, Number(args.seconds) || 1));
      await page.waitForTimeout(s * 1000);
      return { note: `waited ${s} s`, step: step() };
    }
    case 'extract': {
      const r = t ? await element() : undefined;
      const text = (await (r ? r.locator : page.locator('body')).innerText({ timeout }))
        .trim()
        .slice(0, MAX_EXTRACT_CHARS);
      if (typeof args.fileName === 'string')
        await host.saveFile(args.fileName, Buffer.from(text, 'utf8'), 'text/plain');
      const where = r ? r.target : 'the page';
      return {
        note: `read ${where}: ${quote(text, MAX_EXTRACT_CHARS)}${typeof args.fileName === 'string' ? ` (saved as ${args.fileName})` : ''}`,
        step: step(r, { read: text }),
      };
    }
    case 'screenshot': {
      const name = typeof args.fileName === 'string' ? args.fileName : `screenshot-${Date.now()}.png`;
      const png = await page.screenshot({ fullPage: args.fullPage === true, timeout: Math.max(timeout, 10_000) });
      await host.saveFile(name, png, 'image/png');
      return { note: `saved screenshot ${name} (${png.length} bytes)`, step: step() };
    }
    case 'click_at': {
      const x = inside(args.x, host.viewport.width);
      const y = inside(args.y, host.viewport.height);
      const button = args.button === 'right' || args.button === 'middle' ? args.button : 'left';
      const clicks = typeof args.clicks === 'number' ? Math.min(3, Math.max(1, Math.round(args.clicks))) : 1;
      await page.mouse.click(x, y, { button, clickCount: clicks });
      return {
        note: `${clicks === 2 ? 'double-' : clicks === 3 ? 'triple-' : ''}${button === 'left' ? '' : `${button}-`}clicked at (${x}, ${y})`,
        step: step(),
      };
    }
    case 'type_text':
      await page.keyboard.type(str(args.text, 'text'));
      return { note: 'typed text', step: step() };
    case 'done': {
      const success = args.success !== false;
      const result = typeof args.result === 'string' ? args.result : '';
      return { note: success ? 'finished' : 'gave up', step: step(), done: { result, success } };
    }
    default:
      throw new Error(`unknown action ${String(action)}`);
  }
}

/** How a step is named in the log and in a heal prompt. */
export function describeStep(s: RecordedStep): string {
  const args = Object.entries(s.args)
    .filter(([k]) => k !== 'text' || s.action !== 'fill')
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(' ');
  return `${s.action}${s.target ? ` ${s.target}` : ''}${args ? ` ${args}` : ''}`;
}

/** Whether a replay can repeat the step: element steps need a recorded locator. */
export function replayable(s: RecordedStep): boolean {
  return s.target === undefined || typeof s.selector === 'string';
}
