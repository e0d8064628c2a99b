/**
 * The workflow definition editor (CodeMirror 6), loaded lazily by the editor page: the
 * definition as JSON with completion from its JSON Schema (schemas/workflow/definition.schema.json),
 * inline errors from the same schema while typing (validators compiled at build time, see
 * console/vite.config.ts) and, after a save, the API's own 400 `details` at their
 * `instancePath`; and a JavaScript pane for the code of one `code` step at a time, kept in step
 * with the JSON.
 */
import {
  autocompletion,
  type Completion,
  type CompletionContext,
  type CompletionResult,
} from '@codemirror/autocomplete';
import { javascript } from '@codemirror/lang-javascript';
import { json, jsonParseLinter } from '@codemirror/lang-json';
import { syntaxTree } from '@codemirror/language';
import { forceLinting, linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { StateEffect, type EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import type { SyntaxNode } from '@lezer/common';
import { basicSetup } from 'codemirror';
import * as validators from 'virtual:workflow-definition-validator';
import definitionSchema from '../../../schemas/workflow/definition.schema.json';

type Schema = {
  $ref?: string;
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  type?: string | string[];
  description?: string;
};

/** One entry of a validation error's `details`, as the API and the validators give it. */
export interface DetailError {
  instancePath: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const ROOT = definitionSchema as Schema & { $defs: Record<string, Schema> };
const STEP_TYPES = ['code', 'http', 'tool', 'agent'] as const;
type StepType = (typeof STEP_TYPES)[number];

function deref(s: Schema | undefined): Schema | undefined {
  let cur = s;
  while (cur?.$ref) cur = ROOT.$defs[cur.$ref.replace('#/$defs/', '')];
  return cur;
}

// ---- The JSON syntax tree: values, their JSON pointers and back ----

const VALUES = new Set(['Object', 'Array', 'String', 'Number', 'True', 'False', 'Null']);

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

function keyOf(state: EditorState, name: SyntaxNode): string {
  const raw = state.sliceDoc(name.from, name.to);
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw.replace(/^"|"$/g, '');
  }
}

function propertyValue(prop: SyntaxNode): SyntaxNode | undefined {
  return children(prop).find((c) => VALUES.has(c.name));
}

function member(state: EditorState, node: SyntaxNode, seg: string): { value?: SyntaxNode; name?: SyntaxNode } {
  if (node.name === 'Object') {
    for (const prop of children(node).filter((c) => c.name === 'Property')) {
      const name = prop.getChild('PropertyName');
      if (name && keyOf(state, name) === seg) return { value: propertyValue(prop), name };
    }
  } else if (node.name === 'Array') {
    return { value: children(node).filter((c) => VALUES.has(c.name))[Number(seg)] };
  }
  return {};
}

function unescape(seg: string): string {
  return seg.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The text range of the value at a JSON pointer (or of its nearest existing ancestor). */
function rangeOf(state: EditorState, error: DetailError): { from: number; to: number } {
  const top = syntaxTree(state).topNode;
  const first = children(top).find((c) => VALUES.has(c.name));
  if (!first) return { from: 0, to: Math.min(state.doc.length, state.doc.line(1).to) };
  let node: SyntaxNode = first;
  for (const seg of error.instancePath.split('/').slice(1).map(unescape)) {
    const next: SyntaxNode | undefined = member(state, node, seg).value;
    if (!next) break;
    node = next;
  }
  // An unknown property is marked at its name.
  const extra = error.params?.additionalProperty;
  if (typeof extra === 'string') {
    const name = member(state, node, extra).name;
    if (name) return { from: name.from, to: name.to };
  }
  if (node.name === 'Object' || node.name === 'Array') {
    // A container is marked on its first line only, not over everything it holds.
    const line = state.doc.lineAt(node.from);
    return { from: node.from, to: Math.min(node.to, line.to) };
  }
  return { from: node.from, to: node.to };
}

function toDiagnostic(state: EditorState, e: DetailError, source: string): Diagnostic {
  const { from, to } = rangeOf(state, e);
  const extra = typeof e.params?.additionalProperty === 'string' ? ` (${e.params.additionalProperty})` : '';
  const missing = typeof e.params?.missingProperty === 'string' ? ` (${e.params.missingProperty})` : '';
  return {
    from,
    to,
    severity: 'error',
    source,
    message: `${e.instancePath || '/'} ${e.message ?? e.keyword ?? 'is invalid'}${extra}${missing}`,
  };
}

// ---- Validation with the definition's schema, focused as the API focuses it ----

function isStepType(t: unknown): t is StepType {
  return typeof t === 'string' && (STEP_TYPES as readonly string[]).includes(t);
}

/**
 * The schema's errors; inside a step (a oneOf over four shapes) only those of the branch its
 * `type` selects, or one error on `type` when it names no step type.
 */
export function schemaErrors(def: unknown): DetailError[] {
  if (validators.whole(def)) return [];
  const steps = def && typeof def === 'object' ? (def as { steps?: unknown }).steps : undefined;
  const out: DetailError[] = [];
  const seen = new Set<number>();
  for (const e of validators.whole.errors ?? []) {
    const m = /^\/steps\/(\d+)(?:\/|$)/.exec(e.instancePath);
    if (!m || !Array.isArray(steps)) {
      out.push(e);
      continue;
    }
    const i = Number(m[1]);
    if (seen.has(i)) continue;
    seen.add(i);
    const step = steps[i] as { type?: unknown } | null;
    const type = step && typeof step === 'object' ? step.type : undefined;
    if (!isStepType(type)) {
      out.push({
        instancePath: `/steps/${i}/type`,
        keyword: 'enum',
        message: `must be one of ${STEP_TYPES.join(', ')}`,
      });
      continue;
    }
    const branch = validators[type];
    branch(step);
    for (const be of branch.errors ?? []) out.push({ ...be, instancePath: `/steps/${i}${be.instancePath}` });
  }
  if (!out.length && def && typeof def === 'object') {
    const d = def as { output?: { stepIndex?: unknown }; steps?: unknown[] };
    if (Array.isArray(d.steps) && typeof d.output?.stepIndex === 'number' && d.output.stepIndex >= d.steps.length)
      out.push({
        instancePath: '/output/stepIndex',
        message: `must name an existing step (0 to ${d.steps.length - 1})`,
      });
  }
  return out;
}

// ---- Completion from the schema ----

/** The `type` written in a step object, to choose its oneOf branch. */
function branchFor(state: EditorState, schema: Schema, obj: SyntaxNode | undefined): Schema[] {
  const options = (schema.oneOf ?? []).map(deref).filter((s): s is Schema => s !== undefined);
  const typeNode = obj && obj.name === 'Object' ? member(state, obj, 'type').value : undefined;
  const written = typeNode?.name === 'String' ? keyOf(state, typeNode) : undefined;
  const chosen = options.filter((o) => o.properties?.type?.const === written);
  return chosen.length ? chosen : options;
}

/** The schemas that describe the value `node` (several while a step's type is not written yet). */
function schemasAt(state: EditorState, node: SyntaxNode): Schema[] {
  const path: { seg: string; parent: SyntaxNode }[] = [];
  let cur: SyntaxNode | null = node;
  while (cur) {
    const parent: SyntaxNode | null = cur.parent;
    if (!parent) break;
    if (parent.name === 'Property') {
      const name = parent.getChild('PropertyName');
      const obj: SyntaxNode | null = parent.parent;
      if (name && obj) path.unshift({ seg: keyOf(state, name), parent: obj });
      cur = obj;
    } else if (parent.name === 'Array') {
      const idx = children(parent)
        .filter((c) => VALUES.has(c.name))
        .findIndex((c) => c.from === cur!.from);
      path.unshift({ seg: String(Math.max(idx, 0)), parent });
      cur = parent;
    } else {
      cur = parent;
    }
  }
  let current: Schema[] = [ROOT];
  for (const { seg, parent } of path) {
    const next: Schema[] = [];
    for (const s of current) {
      const d = deref(s);
      if (!d) continue;
      for (const b of d.oneOf ? branchFor(state, d, parent) : [d]) {
        const child = /^\d+$/.test(seg) && b.items ? b.items : b.properties?.[seg];
        const extra = typeof b.additionalProperties === 'object' ? b.additionalProperties : undefined;
        const found = deref(child ?? extra);
        if (found) next.push(found);
      }
    }
    current = next;
  }
  return current;
}

function propertyOptions(state: EditorState, obj: SyntaxNode): Completion[] {
  const present = new Set(
    children(obj)
      .filter((c) => c.name === 'Property')
      .map((p) => p.getChild('PropertyName'))
      .filter((n): n is SyntaxNode => n !== null)
      .map((n) => keyOf(state, n)),
  );
  const out = new Map<string, Completion>();
  for (const s of schemasAt(state, obj)) {
    for (const b of s.oneOf ? branchFor(state, s, obj) : [s]) {
      for (const [key, sub] of Object.entries(b.properties ?? {})) {
        if (present.has(key) || out.has(key)) continue;
        const d = deref(sub);
        out.set(key, {
          label: JSON.stringify(key),
          apply: `${JSON.stringify(key)}: `,
          type: 'property',
          ...(d?.description ? { info: d.description } : {}),
        });
      }
    }
  }
  return [...out.values()];
}

function valueOptions(state: EditorState, value: SyntaxNode | undefined, holder: SyntaxNode): Completion[] {
  const schemas = value ? schemasAt(state, value) : schemasAtProperty(state, holder);
  const out: Completion[] = [];
  for (const s of schemas) {
    const values = s.enum ?? (s.const !== undefined ? [s.const] : s.type === 'boolean' ? [true, false] : []);
    for (const v of values)
      out.push({ label: JSON.stringify(v), type: 'enum', ...(s.description ? { info: s.description } : {}) });
    if (s.default !== undefined && !values.length)
      out.push({ label: JSON.stringify(s.default), type: 'constant', detail: 'default' });
  }
  return out;
}

function schemasAtProperty(state: EditorState, prop: SyntaxNode): Schema[] {
  // A property whose value is not written yet: the schema of its key in the enclosing object.
  const name = prop.getChild('PropertyName');
  const obj = prop.parent;
  if (!name || !obj) return [];
  const key = keyOf(state, name);
  const out: Schema[] = [];
  for (const s of schemasAt(state, obj))
    for (const b of s.oneOf ? branchFor(state, s, obj) : [s]) {
      const d = deref(b.properties?.[key]);
      if (d) out.push(d);
    }
  return out;
}

function complete(ctx: CompletionContext): CompletionResult | null {
  const { state, pos } = ctx;
  const node = syntaxTree(state).resolveInner(pos, -1);
  const word = ctx.matchBefore(/"?[\w$-]*"?/);
  const from = word ? word.from : pos;
  if (node.name === 'PropertyName' && node.parent?.parent) {
    return {
      from: node.from,
      to: node.to,
      options: propertyOptions(state, node.parent.parent),
      validFor: /^"?[\w$-]*"?$/,
    };
  }
  if (node.name === 'Object') {
    if (!word && !ctx.explicit) return null;
    return { from, options: propertyOptions(state, node), validFor: /^"?[\w$-]*"?$/ };
  }
  if (node.parent?.name === 'Property' && VALUES.has(node.name) && node.name !== 'Object' && node.name !== 'Array') {
    return { from: node.from, to: node.to, options: valueOptions(state, node, node.parent) };
  }
  if (node.name === 'Property') {
    if (!ctx.explicit && !word) return null;
    return { from, options: valueOptions(state, undefined, node) };
  }
  // Text the parser could not place (a key being typed): complete keys of the enclosing object.
  const obj = findAncestor(node, 'Object');
  if (obj && word) return { from, options: propertyOptions(state, obj), validFor: /^"?[\w$-]*"?$/ };
  return null;
}

function findAncestor(node: SyntaxNode, name: string): SyntaxNode | undefined {
  for (let c: SyntaxNode | null = node; c; c = c.parent) if (c.name === name) return c;
  return undefined;
}

// ---- The editors ----

const theme = EditorView.theme({
  '&': { border: '1px solid #d0d7de', borderRadius: '4px', fontSize: '0.9rem' },
  '&.cm-focused': { outline: '3px solid #1f6feb', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace' },
  '.cm-gutters': { color: '#57606a', backgroundColor: '#f6f8fa', borderRight: '1px solid #d0d7de' },
  '.cm-content': { minHeight: '12rem' },
  '.cm-tooltip-autocomplete ul li[aria-selected]': { backgroundColor: '#0b5cad', color: '#ffffff' },
});

export interface CodeStep {
  index: number;
  name: string;
}

export interface EditorOptions {
  /** Where the JSON editor goes, and its accessible name. */
  jsonParent: HTMLElement;
  jsonLabel: string;
  /** Where the JavaScript pane goes, and its accessible name. */
  codeParent: HTMLElement;
  codeLabel: string;
  doc: string;
  /** The code steps of the definition, each time they change. */
  onCodeSteps: (steps: CodeStep[]) => void;
  /** The messages of the current diagnostics, after each check (listed for screen readers). */
  onProblems: (messages: string[]) => void;
}

/**
 * An editor's own shadow root. CodeMirror styles a document with a `<style>` element, which
 * the console's Content-Security-Policy (`style-src 'self'`) refuses; in a shadow root it uses
 * a constructed stylesheet instead, which the policy allows. Labels are given as `aria-label`,
 * since an id does not reach across the shadow boundary.
 */
function shadowHost(parent: HTMLElement): { host: HTMLElement; root: ShadowRoot; box: HTMLElement } {
  const host = document.createElement('div');
  parent.appendChild(host);
  const root = host.attachShadow({ mode: 'open' });
  const box = document.createElement('div');
  root.appendChild(box);
  return { host, root, box };
}

export interface DefinitionEditor {
  text(): string;
  /** Shows a validation error's `details` inline until the text changes. */
  showApiErrors(details: DetailError[]): void;
  /** Shows the code of step `index` in the JavaScript pane. */
  selectCodeStep(index: number): void;
  focus(): void;
  destroy(): void;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function codeSteps(def: unknown): CodeStep[] {
  const steps = def && typeof def === 'object' ? (def as { steps?: unknown }).steps : undefined;
  if (!Array.isArray(steps)) return [];
  const out: CodeStep[] = [];
  steps.forEach((s: unknown, index) => {
    const step = s as { type?: unknown; name?: unknown; code?: unknown } | null;
    if (step && step.type === 'code' && typeof step.code === 'string')
      out.push({ index, name: typeof step.name === 'string' ? step.name : `Step ${index}` });
  });
  return out;
}

/**
 * The API's errors of a save changed. The linter runs again on it: its own schedule only follows
 * changes of the text, and an answer that arrives after the text's last lint would otherwise
 * never be shown.
 */
const apiErrorsChanged = StateEffect.define<null>();

export function createDefinitionEditor(opts: EditorOptions): DefinitionEditor {
  // The API's errors of the last save, with the text they are about: shown while the definition
  // is that text (a write-back of the code pane that changes nothing keeps them).
  let apiErrors: { details: DetailError[]; text: string } | undefined;
  let selected: number | undefined;
  let syncing = false;
  let lastSteps = '';
  const parseLint = jsonParseLinter();

  const jsonHost = shadowHost(opts.jsonParent);
  const codeHost = shadowHost(opts.codeParent);
  const jsonView = new EditorView({
    parent: jsonHost.box,
    root: jsonHost.root,
    doc: opts.doc,
    extensions: [
      basicSetup,
      json(),
      theme,
      lintGutter(),
      linter(
        (view) => {
          const text = view.state.doc.toString();
          const syntax = parseLint(view);
          const local = syntax.length
            ? syntax
            : schemaErrors(parsed(text)).map((e) => toDiagnostic(view.state, e, 'JSON Schema'));
          const api = apiErrors?.text === text ? apiErrors.details.map((e) => toDiagnostic(view.state, e, 'API')) : [];
          const all = [...api, ...local];
          const line = (d: Diagnostic) => view.state.doc.lineAt(d.from).number;
          opts.onProblems(all.map((d) => `Line ${line(d)}: ${d.message}${d.source === 'API' ? ' (API)' : ''}`));
          return all;
        },
        {
          delay: 300,
          needsRefresh: (u) => u.transactions.some((t) => t.effects.some((e) => e.is(apiErrorsChanged))),
        },
      ),
      autocompletion({ override: [complete] }),
      EditorView.contentAttributes.of({ 'aria-label': opts.jsonLabel }),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged) return;
        const def = parsed(u.state.doc.toString());
        if (def === undefined) return;
        report(def);
        if (!syncing) refreshCode(def);
      }),
    ],
  });

  const codeView = new EditorView({
    parent: codeHost.box,
    root: codeHost.root,
    doc: '',
    extensions: [
      basicSetup,
      javascript(),
      theme,
      EditorView.contentAttributes.of({ 'aria-label': opts.codeLabel }),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged || syncing || selected === undefined) return;
        writeCode(selected, u.state.doc.toString());
      }),
    ],
  });

  function report(def: unknown): void {
    const steps = codeSteps(def);
    const key = JSON.stringify(steps);
    if (key === lastSteps) return;
    lastSteps = key;
    opts.onCodeSteps(steps);
    if (selected === undefined || !steps.some((s) => s.index === selected)) {
      selected = steps[0]?.index;
      refreshCode(def);
    }
  }

  function refreshCode(def: unknown): void {
    const steps = (def as { steps?: { code?: unknown }[] } | undefined)?.steps;
    const code = selected !== undefined ? steps?.[selected]?.code : undefined;
    const text = typeof code === 'string' ? code : '';
    if (text === codeView.state.doc.toString()) return;
    syncing = true;
    codeView.dispatch({ changes: { from: 0, to: codeView.state.doc.length, insert: text } });
    syncing = false;
  }

  /** The JavaScript pane's text written back into the step's `code` string. */
  function writeCode(index: number, code: string): void {
    const state = jsonView.state;
    const top = children(syntaxTree(state).topNode).find((c) => VALUES.has(c.name));
    const steps = top && member(state, top, 'steps').value;
    const step = steps && member(state, steps, String(index)).value;
    const node = step && member(state, step, 'code').value;
    if (!node) return;
    syncing = true;
    jsonView.dispatch({ changes: { from: node.from, to: node.to, insert: JSON.stringify(code) } });
    syncing = false;
  }

  const initial = parsed(opts.doc);
  if (initial !== undefined) report(initial);

  return {
    text: () => jsonView.state.doc.toString(),
    showApiErrors(details) {
      apiErrors = {
        details: details.filter((d) => typeof d?.instancePath === 'string'),
        text: jsonView.state.doc.toString(),
      };
      jsonView.dispatch({ effects: apiErrorsChanged.of(null) });
      forceLinting(jsonView);
    },
    selectCodeStep(index) {
      selected = index;
      refreshCode(parsed(jsonView.state.doc.toString()));
    },
    focus: () => jsonView.focus(),
    destroy() {
      jsonView.destroy();
      codeView.destroy();
      jsonHost.host.remove();
      codeHost.host.remove();
    },
  };
}
