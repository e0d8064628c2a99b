/**
 * The relay's decision on one runner → browser call (src/browser/relay.ts, README.md
 * "Network"): the call's interface is the type of the object it is sent to (relay-objects.ts);
 * the method must be allowed for that interface (protocol-allowlist.ts), its parameters are
 * refused, dropped or rewritten as the list says, a CDP command must be allowed
 * (cdp-allowlist.ts), and every url that is not http(s) or about:blank is refused (urls.ts).
 */
import { CDP_ALLOWLIST, CDP_PARAMS, CDP_REFUSED_DOMAINS } from './cdp-allowlist.js';
import { ANY_OBJECT_METHODS, PLAYWRIGHT_ALLOWLIST, type ParamRule } from './protocol-allowlist.js';
import { navigationRefusal } from './urls.js';

export type Msg = Record<string, unknown>;

export const isObject = (v: unknown): v is Msg => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface ScreenOptions {
  /** The guarded proxy every context is put on. */
  proxy: string;
  /** Refuse URLs that are not http(s) or about:blank (off only under the test-only switch). */
  schemes: boolean;
}

/** `msg` goes on (rewritten when the list says so), or the script gets the error. */
export type Screened = { ok: true; msg: Msg; changed: boolean } | { ok: false; name: string; message: string };

const PLAIN_NAME = /^[\w-][\w.-]{0,199}$/;
/** Keys whose string values the browser or playwright-core opens or navigates to. */
const URL_KEYS = new Set(['url', 'baseurl', 'origin']);

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

const refused = (message: string): Screened => ({ ok: false, name: 'Error', message });

/** Absent, null and empty arrays count as not given. */
const given = (v: unknown): boolean => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);

/** Every value at a dotted path, arrays on the way looked through. */
function valuesAt(value: unknown, keys: readonly string[]): unknown[] {
  if (keys.length === 0) return [value];
  if (Array.isArray(value)) return value.flatMap((v) => valuesAt(v, keys));
  if (!isObject(value) || !Object.hasOwn(value, keys[0]!)) return [];
  return valuesAt(value[keys[0]!], keys.slice(1));
}

/** Removes the last key of a dotted path wherever it occurs (in place). */
function dropAt(value: unknown, keys: readonly string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) dropAt(v, keys);
    return;
  }
  if (!isObject(value) || !Object.hasOwn(value, keys[0]!)) return;
  if (keys.length === 1) delete value[keys[0]!];
  else dropAt(value[keys[0]!], keys.slice(1));
}

/**
 * Applies the parameter rules to `params` (a copy is made before anything changes). Answers the
 * refusal, or the parameters to send and whether they changed.
 */
function applyRules(
  params: Msg,
  rules: Readonly<Record<string, ParamRule>>,
  opts: ScreenOptions,
  where: string,
): { refusal: string } | { params: Msg; changed: boolean } {
  let out = params;
  let changed = false;
  const writable = () => {
    if (!changed) out = structuredClone(params);
    changed = true;
    return out;
  };
  for (const [path, rule] of Object.entries(rules)) {
    const keys = path.split('.');
    const values = valuesAt(out, keys);
    if (rule.how === 'refuse' && values.some(given))
      return { refusal: `The parameter ${path} of ${where} is not available to browser scripts: ${rule.why}.` };
    if (
      rule.how === 'plainName' &&
      values.some((v) => v !== undefined && (typeof v !== 'string' || !PLAIN_NAME.test(v)))
    )
      return { refusal: `The parameter ${path} of ${where} is refused: ${rule.why}.` };
    if (rule.how === 'drop' && values.length > 0) dropAt(writable(), keys);
    if (rule.how === 'proxy') writable()[path] = { server: opts.proxy };
  }
  return { params: out, changed };
}

/** The first url-like value (under a key named url, baseURL or origin) that may not be opened. */
export function refusedUrl(value: unknown, depth: number): string | undefined {
  if (depth < 0) return undefined;
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = refusedUrl(v, depth - 1);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const found =
      typeof v === 'string'
        ? URL_KEYS.has(k.toLowerCase())
          ? navigationRefusal(v)
          : undefined
        : refusedUrl(v, depth - 1);
    if (found) return found;
  }
  return undefined;
}

/** Why a CDP command (`CDPSession.send` params) may not be sent, or undefined when it may. */
function cdpRefusal(cdp: Msg): string | undefined {
  const command = typeof cdp.method === 'string' ? cdp.method : '';
  const [domain = '', name = ''] = command.split('.', 2);
  const whole = own(CDP_REFUSED_DOMAINS, domain);
  if (whole) return `The CDP command ${command} is not available to browser scripts: ${whole}.`;
  const rules = own(CDP_ALLOWLIST, domain);
  const why = rules?.refuse ? own(rules.refuse, name) : undefined;
  if (why) return `The CDP command ${command} is not available to browser scripts: ${why}.`;
  if (!rules?.allow.includes(name) || command !== `${domain}.${name}`)
    return `The CDP command ${command.slice(0, 100)} is not available to browser scripts (not on the relay's allow-list).`;
  const params = own(CDP_PARAMS, command);
  if (!params) return undefined;
  const checked = applyRules(isObject(cdp.params) ? cdp.params : {}, params, { proxy: '', schemes: true }, command);
  return 'refusal' in checked ? checked.refusal : undefined;
}

/**
 * The relay's decision on a runner → browser call sent to an object of interface `type`
 * (undefined: an object the relay does not know, closed or never made).
 */
export function screenCall(msg: Msg, type: string | undefined, opts: ScreenOptions): Screened {
  const method = typeof msg.method === 'string' ? msg.method.slice(0, 100) : '';
  if (type === undefined) {
    return {
      ok: false,
      name: 'TargetClosedError',
      message: `The call ${method} is refused: the relay knows no object ${String(msg.guid).slice(0, 100)} (it was closed, or never made).`,
    };
  }
  if (ANY_OBJECT_METHODS.has(method)) return { ok: true, msg, changed: false };
  const where = `${type}.${method}`;
  const interfaceRules = own(PLAYWRIGHT_ALLOWLIST, type);
  const rule = interfaceRules ? own(interfaceRules, method) : undefined;
  if (!rule) return refused(`The call ${where} is not available to browser scripts (not on the relay's allow-list).`);
  if ('refuse' in rule) return refused(`The call ${where} is not available to browser scripts: ${rule.refuse}.`);
  if (msg.params !== undefined && !isObject(msg.params))
    return refused(`The call ${where} is refused: its parameters are not an object.`);
  const sent: Msg = isObject(msg.params) ? msg.params : {};
  const checked = rule.params ? applyRules(sent, rule.params, opts, where) : { params: sent, changed: false };
  if ('refusal' in checked) return refused(checked.refusal);
  const { params, changed } = checked;
  if (type === 'CDPSession' && method === 'send') {
    const why = cdpRefusal(params);
    if (why) return refused(why);
  }
  const url = opts.schemes ? refusedUrl(params, 8) : undefined;
  if (url) return refused(url);
  return changed ? { ok: true, msg: { ...msg, params }, changed } : { ok: true, msg, changed };
}
