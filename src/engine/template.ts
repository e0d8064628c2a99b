/**
 * Step input templates (src/engine/README.md: "one documented expression language"; schema
 * workflow/definition.schema.json): JSONata expressions written `{{ expression }}` inside
 * strings, evaluated against `{inputs, steps}`.
 * - A string that is exactly one template takes the expression's value, any JSON type
 *   (no match → undefined, so the field is left out of objects and JSON bodies).
 * - Otherwise each template is replaced by its value as text: strings as they are, numbers and
 *   booleans as written, objects and arrays as JSON, null as `null`, no match as ``.
 * - Objects and arrays are walked recursively; only string values are templated, never keys.
 * - A literal `{{` is written as a JSONata string: `{{ "{{" }}`.
 * Expressions come from workflow authors and run in the service process, so evaluation is
 * bounded: wall clock per expression and per step, call depth, sequence length, and the size
 * of every intermediate string or array (which stops doubling loops); `$pad` is bounded too.
 * Not bounded: a regular expression with catastrophic backtracking written by the author.
 */
import jsonata from 'jsonata';

export interface TemplateData {
  inputs: unknown;
  steps: unknown;
}

export interface TemplateLimits {
  /** Wall clock of one expression (ms). */
  expressionTimeoutMs: number;
  /** Wall clock of all expressions of one step (ms). */
  totalTimeoutMs: number;
  /** Evaluation depth (JSONata's own stack guard). */
  maxDepth: number;
  /** Items of any sequence or array produced along the way. */
  maxItems: number;
  /** Characters of any string produced along the way. */
  maxStringLength: number;
}

export const DEFAULT_TEMPLATE_LIMITS: Readonly<TemplateLimits> = Object.freeze({
  expressionTimeoutMs: 1000,
  totalTimeoutMs: 5000,
  maxDepth: 500,
  maxItems: 1_000_000,
  maxStringLength: 10 * 1024 * 1024,
});

/** An invalid expression or a failed evaluation; the step fails with exitCode 2. */
export class TemplateError extends Error {
  constructor(
    readonly expression: string,
    detail: string,
  ) {
    super(
      `Template error in {{ ${expression.length > 200 ? `${expression.slice(0, 200)}…` : expression} }}: ${detail}`,
    );
    this.name = 'TemplateError';
  }
}

interface Segment {
  start: number;
  end: number;
  expression: string;
}

/**
 * The `{{ … }}` templates of a string. The closing `}}` is the first one outside string
 * literals, quoted names, comments and nested braces, so object constructors such as
 * `{{ {"a": {"b": 1}} }}` work.
 */
export function findTemplates(text: string): Segment[] {
  const out: Segment[] = [];
  let i = text.indexOf('{{');
  while (i >= 0) {
    const end = closingBraces(text, i + 2);
    if (end < 0) throw new TemplateError(text.slice(i + 2).trim(), 'the template has no closing }}');
    out.push({ start: i, end: end + 2, expression: text.slice(i + 2, end).trim() });
    i = text.indexOf('{{', end + 2);
  }
  return out;
}

function closingBraces(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      i = skipQuoted(text, i, c);
    } else if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + 1;
    } else if (c === '{' || c === '(' || c === '[') {
      depth += 1;
    } else if (c === '}' && depth === 0 && text[i + 1] === '}') {
      return i;
    } else if (c === '}' || c === ')' || c === ']') {
      depth = Math.max(0, depth - 1);
    }
  }
  return -1;
}

function skipQuoted(text: string, open: number, quote: string): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\' && quote !== '`') i += 1;
    else if (text[i] === quote) return i;
  }
  return text.length;
}

export function hasTemplate(text: string): boolean {
  return text.includes('{{');
}

/** `$pad` with a bounded width: the one built-in that makes a huge string from tiny input. */
function boundedPad(limits: TemplateLimits) {
  return (str: string | undefined, width: number, char?: string): string | undefined => {
    if (str === undefined) return undefined;
    if (Math.abs(width) > limits.maxStringLength) throw new Error(`$pad width over ${limits.maxStringLength}`);
    const fill = char === undefined || char === '' ? ' ' : char;
    const chars = Array.from(str);
    const missing = Math.abs(width) - chars.length;
    if (missing <= 0) return str;
    const padding = Array.from(fill.repeat(Math.ceil(missing / Array.from(fill).length)))
      .slice(0, missing)
      .join('');
    return width < 0 ? padding + str : str + padding;
  };
}

type Deadline = { at: number };

async function evaluate(
  expression: string,
  data: TemplateData,
  limits: TemplateLimits,
  deadline: Deadline,
): Promise<unknown> {
  const remaining = deadline.at - Date.now();
  if (remaining <= 0)
    throw new TemplateError(expression, `the templates of this step took longer than ${limits.totalTimeoutMs} ms`);
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(expression, {
      timeout: Math.min(limits.expressionTimeoutMs, remaining),
      stack: limits.maxDepth,
      sequence: limits.maxItems,
    });
  } catch (err) {
    throw new TemplateError(expression, describe(err));
  }
  compiled.registerFunction('pad', boundedPad(limits), '<s-ns?:s>');
  // Every intermediate result passes here (JSONata's evaluate-exit hook).
  compiled.assign(
    Symbol.for('jsonata.__evaluate_exit') as unknown as string,
    (_expr: unknown, _input: unknown, _env: unknown, result: unknown) => {
      if (typeof result === 'string' && result.length > limits.maxStringLength)
        throw new Error(`a string over ${limits.maxStringLength} characters`);
      if (Array.isArray(result) && result.length > limits.maxItems)
        throw new Error(`a sequence over ${limits.maxItems} items`);
    },
  );
  let value: unknown;
  try {
    value = await compiled.evaluate(data);
  } catch (err) {
    throw new TemplateError(expression, describe(err));
  }
  if (typeof value === 'function' || isJsonataFunction(value))
    throw new TemplateError(expression, 'the expression evaluates to a function, not a value');
  if (value === undefined) return undefined;
  // Plain JSON: drops JSONata's sequence markers and anything JSON cannot carry.
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch (err) {
    throw new TemplateError(expression, `the value cannot be represented as JSON (${(err as Error).message})`);
  }
}

function isJsonataFunction(value: unknown): boolean {
  return typeof value === 'object' && value !== null && ('_jsonata_lambda' in value || '_jsonata_function' in value);
}

function describe(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { message?: unknown; code?: unknown; position?: unknown };
    const where = typeof e.position === 'number' ? ` at position ${e.position}` : '';
    const code = typeof e.code === 'string' ? ` [${e.code}]` : '';
    return `${String(e.message ?? 'evaluation failed')}${code}${where}`;
  }
  return String(err);
}

function asText(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

async function renderString(
  text: string,
  data: TemplateData,
  limits: TemplateLimits,
  deadline: Deadline,
): Promise<unknown> {
  if (!hasTemplate(text)) return text;
  const segments = findTemplates(text);
  if (segments.length === 0) return text;
  const first = segments[0]!;
  if (segments.length === 1 && first.start === 0 && first.end === text.length)
    return evaluate(first.expression, data, limits, deadline);
  let out = '';
  let at = 0;
  for (const s of segments) {
    out += text.slice(at, s.start) + asText(await evaluate(s.expression, data, limits, deadline));
    at = s.end;
  }
  return out + text.slice(at);
}

/**
 * Renders every template in `value` (strings, and strings inside arrays and plain objects).
 * Throws TemplateError on the first bad or failing expression.
 */
export async function renderTemplates(
  value: unknown,
  data: TemplateData,
  limits: Partial<TemplateLimits> = {},
): Promise<unknown> {
  const l = { ...DEFAULT_TEMPLATE_LIMITS, ...limits };
  return render(value, data, l, { at: Date.now() + l.totalTimeoutMs });
}

async function render(
  value: unknown,
  data: TemplateData,
  limits: TemplateLimits,
  deadline: Deadline,
): Promise<unknown> {
  if (typeof value === 'string') return renderString(value, data, limits, deadline);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value) out.push(await render(v, data, limits, deadline));
    return out;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = await render(v, data, limits, deadline);
      if (r !== undefined) out[k] = r;
    }
    return out;
  }
  return value;
}
