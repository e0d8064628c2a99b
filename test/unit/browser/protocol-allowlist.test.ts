/**
 * The relay's allow-lists (src/browser/protocol-allowlist.ts, cdp-allowlist.ts) against the
 * protocol of the installed playwright-core, read from its own bundled validator
 * (test/helpers/playwright-protocol.ts): every method of every interface is decided, no entry
 * names a method the protocol no longer has, every parameter of an allowed method that is named
 * like a path, folder, file, program, arguments, environment or proxy has a declared treatment,
 * and every CDP command the list names exists in the CDP types playwright-core ships. A
 * playwright-core upgrade that adds a method or such a parameter fails here until the list
 * decides it.
 */
import { expect } from 'chai';
import { PLAYWRIGHT_ALLOWLIST, type MethodRule, type ParamRule } from '../../../src/browser/protocol-allowlist.js';
import { CDP_ALLOWLIST, CDP_PARAMS, CDP_REFUSED_DOMAINS } from '../../../src/browser/cdp-allowlist.js';
import { cdpCommands, fieldsNamed, hasField, playwrightProtocol } from '../../helpers/playwright-protocol.js';

type List = Readonly<Record<string, Readonly<Record<string, MethodRule>>>>;

/** Names of parameters that could name something on the service's machine. */
const HOST_LIKE =
  /path|dir(ectory)?(name|s|stream)?$|^dir|directory|file|executable|^args$|^env$|proxy|^cwd$|socket|userdata/i;

/** Protocol methods the list does not decide. */
function undecided(list: List): string[] {
  return [...playwrightProtocol().methods.keys()].filter((m) => {
    const [iface, method] = m.split('.') as [string, string];
    return !Object.hasOwn(list, iface) || !Object.hasOwn(list[iface]!, method);
  });
}

/** List entries the protocol does not have. */
function stale(list: List): string[] {
  const { methods } = playwrightProtocol();
  return Object.entries(list).flatMap(([iface, rules]) =>
    Object.keys(rules)
      .map((m) => `${iface}.${m}`)
      .filter((m) => !methods.has(m)),
  );
}

/** Host-like parameters of allowed methods without a rule of their own or of an enclosing parameter. */
function undeclared(list: List): string[] {
  const { methods, types } = playwrightProtocol();
  const out: string[] = [];
  for (const [name, scheme] of methods) {
    const [iface, method] = name.split('.') as [string, string];
    const rule = list[iface]?.[method];
    if (!rule || 'refuse' in rule) continue;
    const declared = Object.keys(rule.params ?? {});
    for (const field of fieldsNamed(scheme, HOST_LIKE, types)) {
      const covered = declared.some((d) => field === d || field.startsWith(`${d}.`));
      if (!covered) out.push(`${name} ${field}`);
    }
  }
  return out;
}

describe('browser relay allow-list against the installed playwright-core protocol', () => {
  it('reads the protocol from playwright-core itself', () => {
    const { interfaces, methods } = playwrightProtocol();
    expect(interfaces).to.include.members(['Root', 'Browser', 'BrowserContext', 'Page', 'Frame', 'CDPSession']);
    expect(methods.has('Frame.goto')).to.equal(true);
    expect(methods.has('Android.devices'), 'a Params name splits at a capitalised method name').to.equal(true);
    expect(methods.has('Tracing.tracingStart')).to.equal(true);
    expect(methods.size).to.be.above(250);
  });

  it('decides every method of every interface, and names no method the protocol does not have', () => {
    expect(undecided(PLAYWRIGHT_ALLOWLIST), 'methods the list does not decide').to.deep.equal([]);
    expect(stale(PLAYWRIGHT_ALLOWLIST), 'entries the protocol does not have').to.deep.equal([]);
    // The checks see a gap and a stale entry when there is one.
    const { goto: _goto, ...frame } = PLAYWRIGHT_ALLOWLIST.Frame!;
    const gapped = { ...PLAYWRIGHT_ALLOWLIST, Frame: { ...frame, gotoSomewhere: { allow: true } as MethodRule } };
    expect(undecided(gapped)).to.deep.equal(['Frame.goto']);
    expect(stale(gapped)).to.deep.equal(['Frame.gotoSomewhere']);
  });

  it('declares how each allowed method treats every parameter named like a host path, folder, program, environment or proxy', () => {
    expect(undeclared(PLAYWRIGHT_ALLOWLIST), 'host-like parameters without a declared treatment').to.deep.equal([]);
    const { recordVideo: _recordVideo, ...options } = (
      PLAYWRIGHT_ALLOWLIST.Browser!.newContext as { params: Record<string, ParamRule> }
    ).params;
    const loose = {
      ...PLAYWRIGHT_ALLOWLIST,
      Browser: { ...PLAYWRIGHT_ALLOWLIST.Browser, newContext: { allow: true, params: options } },
    };
    expect(undeclared(loose as List)).to.deep.equal(['Browser.newContext recordVideo.dir']);
  });

  it('declares only parameters the methods have', () => {
    const { methods, types } = playwrightProtocol();
    const missing: string[] = [];
    for (const [iface, rules] of Object.entries(PLAYWRIGHT_ALLOWLIST)) {
      for (const [method, rule] of Object.entries(rules)) {
        if ('refuse' in rule) continue;
        for (const param of Object.keys(rule.params ?? {})) {
          const scheme = methods.get(`${iface}.${method}`);
          if (!scheme || !hasField(scheme, param.split('.'), types)) missing.push(`${iface}.${method} ${param}`);
        }
      }
    }
    expect(missing).to.deep.equal([]);
  });

  it('the refusals that close known holes stay refused', () => {
    const rule = (iface: string, method: string) => PLAYWRIGHT_ALLOWLIST[iface]?.[method];
    for (const [iface, method] of [
      ['Browser', 'newContextForReuse'],
      ['Artifact', 'saveAs'],
      ['BrowserContext', 'createTempFiles'],
      ['BrowserType', 'launch'],
      ['Browser', 'startServer'],
      ['LocalUtils', 'zip'],
    ] as const)
      expect(rule(iface, method), `${iface}.${method}`).to.have.property('refuse');
    const newContext = rule('Browser', 'newContext') as { params: Record<string, ParamRule> };
    expect(newContext.params.recordVideo?.how).to.equal('refuse');
    expect(newContext.params.proxy?.how).to.equal('proxy');
  });

  it('every CDP command the list names exists in the CDP types playwright-core ships, and every refused domain too', () => {
    const commands = cdpCommands();
    expect(commands.size).to.be.above(400);
    const named = Object.entries(CDP_ALLOWLIST).flatMap(([domain, d]) =>
      [...d.allow, ...Object.keys(d.refuse ?? {})].map((m) => `${domain}.${m}`),
    );
    expect(
      named.filter((c) => !commands.has(c)),
      'commands playwright-core does not know',
    ).to.deep.equal([]);
    expect(Object.keys(CDP_PARAMS).filter((c) => !commands.has(c))).to.deep.equal([]);
    const domains = new Set([...commands].map((c) => c.split('.')[0]));
    expect(Object.keys(CDP_REFUSED_DOMAINS).filter((d) => !domains.has(d))).to.deep.equal([]);
    for (const d of Object.keys(CDP_REFUSED_DOMAINS)) expect(CDP_ALLOWLIST, d).to.not.have.property(d);
    // A command can be allowed or refused, not both.
    for (const [domain, d] of Object.entries(CDP_ALLOWLIST))
      for (const m of d.allow) expect(d.refuse ?? {}, `${domain}.${m}`).to.not.have.property(m);
  });
});
