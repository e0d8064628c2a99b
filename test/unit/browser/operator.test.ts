/**
 * Parts of the browser operator that need no browser (src/browser/operator): the start URL of a
 * task, computer-use key names, the replay script a cache entry is written out as (reads become
 * variables, password text is left out), the cache's slot hash, and the ad blocker's loading
 * from BROWSER_ADBLOCK_LISTS (a list it cannot read is "not applied" with the reason, never a throw).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { expect } from 'chai';
import { planOperator, startUrlOf, type OperatorDeps } from '../../../src/browser/operator/task.js';
import { loadConfig } from '../../../src/config/index.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { TaskError } from '../../../src/browser/errors.js';
import { playwrightKey } from '../../../src/browser/operator/cua.js';
import { replayScript } from '../../../src/browser/operator/replay-script.js';
import { taskHash } from '../../../src/browser/operator/cache.js';
import { AdBlocker } from '../../../src/browser/operator/adblock.js';
import { readPairs, refreshResult } from '../../../src/browser/operator/reads.js';

describe('browser operator (no browser)', () => {
  it('the start URL is the first http(s) URL of the task, without trailing punctuation', () => {
    expect(startUrlOf('Open https://example.com/pricing, then return the plans')).to.equal(
      'https://example.com/pricing',
    );
    expect(startUrlOf('Go to (http://127.0.0.1:8080/a?b=1). Done.')).to.equal('http://127.0.0.1:8080/a?b=1');
    expect(startUrlOf('Find the cheapest flight')).to.equal(null);
    expect(startUrlOf('Open ftp://files.example.com')).to.equal(null);
  });

  it('the cache slot depends on the task text and the start URL', () => {
    expect(taskHash('a', null)).to.equal(taskHash('a', null));
    expect(taskHash('a', null)).to.not.equal(taskHash('a', 'https://x.example/'));
    expect(taskHash('a', null)).to.not.equal(taskHash('b', null));
    expect(taskHash('a', null)).to.match(/^[0-9a-f]{64}$/);
  });

  it('computer-use key names become Playwright key names', () => {
    expect(playwrightKey('Return')).to.equal('Enter');
    expect(playwrightKey('ctrl+a')).to.equal('Control+a');
    expect(playwrightKey('shift+Tab')).to.equal('Shift+Tab');
    expect(playwrightKey('Page_Down')).to.equal('PageDown');
    expect(playwrightKey('f5')).to.equal('F5');
    expect(playwrightKey('super+l')).to.equal('Meta+l');
  });

  it('writes a cache entry out as a playwright_run script: reads become variables of the result, password text stays out', async () => {
    const code = replayScript(
      {
        startUrl: 'https://shop.example/login',
        steps: [
          {
            action: 'fill',
            args: { text: 'ada' },
            selector: 'internal:role=textbox[name="User"i]',
            target: "getByRole('textbox', { name: 'User' })",
          },
          {
            action: 'fill',
            args: { text: 'hunter2', submit: true },
            selector: 'internal:role=textbox[name="Password"i]',
            target: 'x',
            secret: true,
          },
          { action: 'extract', args: {}, selector: 'css=#total', read: '42 EUR' },
        ],
        result: 'The total is 42 EUR (42 EUR incl. VAT)',
      },
      {
        task: 'Sign in and read the total',
        buildId: 'bld_0123456789abcdef01234567',
        viewport: { width: 1288, height: 711 },
      },
    );
    expect(code).to.not.include('hunter2');
    expect(code)
      .to.include('await page.goto("https://shop.example/login");')
      .and.include('.fill("ada")')
      .and.include('.fill(SECRET_1)')
      .and.include(".press('Enter')")
      .and.include('const read1 = (await page.locator("css=#total").innerText()).trim();')
      .and.include('return "The total is " + read1 + " (" + read1 + " incl. VAT)";');
    // It compiles as the body of an async function, the way playwright_run runs it.
    expect(() => new vm.Script(`(async () => {\n${code}\n})()`)).to.not.throw();
  });

  it('a replayed result is brought up to date only where it quotes a changed read whole; otherwise the model must answer again', () => {
    const same = { recorded: 'Total: 99.50 EUR', now: 'Total: 99.50 EUR' };
    expect(refreshResult('The total is 99.50 EUR', [same])).to.equal('The total is 99.50 EUR');
    // The page's text changed and the result only says something made from it: no substitution can fix that.
    expect(
      refreshResult('The total is 99.50 EUR', [
        { recorded: 'Basket\nTotal: 99.50 EUR', now: 'Basket\nTotal: 12.00 EUR' },
      ]),
    ).to.equal(undefined);
    expect(refreshResult('Total: 99.50 EUR', [{ recorded: 'Total: 99.50 EUR', now: 'Total: 12.00 EUR' }])).to.equal(
      'Total: 12.00 EUR',
    );
    expect(refreshResult('Confirmation: Order 1001', [{ recorded: 'Order 1001', now: 'Order 1002' }])).to.equal(
      'Confirmation: Order 1002',
    );
    // A read of "5" is not quoted by "15 items": the result does not quote it whole.
    expect(refreshResult('15 items, 5 left', [{ recorded: '5', now: '7' }])).to.equal('15 items, 7 left');
    expect(refreshResult('15 items', [{ recorded: '5', now: '7' }])).to.equal(undefined);
    // A read that did not run again is a read that may have changed.
    expect(refreshResult('Order 1001', [{ recorded: 'Order 1001', now: undefined }])).to.equal(undefined);
    // Two changed reads, one inside the other: the longer one wins where they overlap.
    expect(
      refreshResult('A: 1 and A: 1 total', [
        { recorded: 'A: 1 total', now: 'A: 2 total' },
        { recorded: 'A: 1', now: 'A: 3' },
      ]),
    ).to.equal('A: 3 and A: 2 total');
  });

  it('pairs each recorded read with the replay read of the same element in order; a read that did not run again has none', () => {
    const read = (selector: string | undefined, text: string) => ({
      action: 'extract' as const,
      args: {},
      ...(selector ? { selector } : {}),
      read: text,
    });
    const click = { action: 'click' as const, args: {}, selector: 'internal:role=button' };
    expect(
      readPairs(
        [read('#out', ''), click, read('#out', 'Order 1001'), read(undefined, 'page'), read('#gone', 'x')],
        [read('#out', ''), click, read('#out', 'Order 1002'), read(undefined, 'page now')],
      ),
    ).to.deep.equal([
      { recorded: '', now: '' },
      { recorded: 'Order 1001', now: 'Order 1002' },
      { recorded: 'page', now: 'page now' },
      { recorded: 'x', now: undefined },
    ]);
  });

  describe('planOperator', () => {
    let dir: string;
    const deps = (env: Record<string, string>): OperatorDeps => ({
      db: undefined as never,
      config: loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env }),
      policy: new OutboundPolicy(parseOutboundAllowlist(''), []),
      now: Date.now,
    });
    const model = { DEFAULT_MODEL: 'openai-compatible/local', OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1' };
    before(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'sy-plan-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('writes every argument it cannot honour into the log lines, and names the model it falls back to', async () => {
      const plan = await planOperator(deps(model), 'org_1', {
        task: 'Open https://example.com',
        cacheKey: 'Abcd1234',
        region: 'ap-southeast-1',
        proxies: true,
        advancedStealth: true,
      });
      expect(plan.notes).to.deep.equal([
        'model: google/gemini-3-flash-preview is not configured on this server (The model "google/gemini-3-flash-preview" needs GOOGLE_GENERATIVE_AI_API_KEY, which is not set); running DEFAULT_MODEL openai-compatible/local',
        'region ap-southeast-1: not applied; the browser runs on this server, in its own network',
        'proxies: not applied; BROWSER_PROXY_URL is not set on this server (traffic goes through its outbound guard directly)',
        'advancedStealth: not applied; this server runs stock headless Chromium',
        'solveCaptchas: not applied; no CAPTCHA solver is available here (a CAPTCHA stops the task)',
      ]);
      expect(plan).to.include({
        mode: 'hybrid',
        maxSteps: 30,
        blockAds: true,
        recordSession: true,
        startUrl: 'https://example.com/',
        viaProxy: false,
      });
      expect(plan.viewport).to.deep.equal({ width: 1288, height: 711 });
      expect(plan.buildId).to.match(/^bld_[0-9a-f]{24}$/);
      expect(plan.cache).to.have.property('days', 7);
    });

    it('proxies: true goes through BROWSER_PROXY_URL when it is set, naming its host and never its credentials', async () => {
      const plan = await planOperator(
        deps({ ...model, BROWSER_PROXY_URL: 'http://user:pw-123@proxy.example:8000' }),
        'org_1',
        { task: 't', cacheKey: 'Abcd1234', proxies: true, solveCaptchas: false },
      );
      expect(plan.viaProxy).to.equal(true);
      expect(plan.notes.join('\n'))
        .to.include('proxies: through BROWSER_PROXY_URL (proxy.example:8000)')
        .and.not.include('pw-123');
    });

    it('the cache is off for disableCache and for any task mentioning a screenshot; the build id follows the key and the task', async () => {
      const d = deps(model);
      expect(
        (await planOperator(d, 'o', { task: 'Take Screenshots of the home page', cacheKey: 'Abcd1234' })).cache,
      ).to.deep.equal({ off: 'the task mentions a screenshot' });
      expect(
        (await planOperator(d, 'o', { task: 'read', cacheKey: 'Abcd1234', disableCache: true })).cache,
      ).to.deep.equal({ off: 'disableCache is true' });
      const a = await planOperator(d, 'o', { task: 'read', cacheKey: 'Abcd1234' });
      expect((await planOperator(d, 'o', { task: 'read', cacheKey: 'Abcd1234' })).buildId).to.equal(a.buildId);
      expect((await planOperator(d, 'o', { task: 'read', cacheKey: 'Abcd1235' })).buildId).to.not.equal(a.buildId);
      expect((await planOperator(d, 'o', { task: 'read it', cacheKey: 'Abcd1234' })).buildId).to.not.equal(a.buildId);
    });

    it('cua needs an anthropic/ model, requested or DEFAULT_MODEL', async () => {
      let refused: unknown;
      await planOperator(deps(model), 'o', { task: 't', cacheKey: 'Abcd1234', agentMode: 'cua' }).catch(
        (err: unknown) => (refused = err),
      );
      expect(refused).to.be.instanceOf(TaskError);
      expect((refused as Error).message).to.match(
        /agentMode cua needs a computer-use model.*google\/gemini-3-flash-preview is not one, nor is DEFAULT_MODEL openai-compatible\/local/,
      );
      const viaDefault = await planOperator(
        deps({ DEFAULT_MODEL: 'anthropic/claude-sonnet-4', ANTHROPIC_API_KEY: 'k' }),
        'o',
        { task: 't', cacheKey: 'Abcd1234', agentMode: 'cua' },
      );
      expect(viaDefault.notes[0]).to.equal(
        'model: google/gemini-3-flash-preview has no computer use; running DEFAULT_MODEL anthropic/claude-sonnet-4 (computer use)',
      );
      expect(viaDefault.modelId).to.equal('anthropic/claude-sonnet-4-0');
    });
  });

  describe('AdBlocker', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'sy-adblock-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('loads the lists of BROWSER_ADBLOCK_LISTS once and keeps the engine', async () => {
      const list = path.join(dir, 'list.txt');
      writeFileSync(list, '||ads.example^\n');
      const blocker = new AdBlocker({ lists: [list], dataDir: dir });
      const loaded = await blocker.get();
      expect(loaded).to.have.property('describe', 'the 1 list(s) of BROWSER_ADBLOCK_LISTS');
      expect(await blocker.get()).to.equal(loaded);
    });

    it('a list it cannot read makes blockAds "not applied" with the reason', async () => {
      const blocker = new AdBlocker({ lists: [path.join(dir, 'missing.txt')], dataDir: dir });
      const loaded = await blocker.get();
      expect(loaded)
        .to.have.property('unavailable')
        .that.match(/BROWSER_ADBLOCK_LISTS.*could not be loaded: ENOENT/);
    });
  });
});
