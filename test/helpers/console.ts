/**
 * The web console in Chromium for the console tests: one browser page that records what the
 * Content-Security-Policy refuses, a sign-in through the console's own form, and an audit of the
 * page shown (a screenshot into .tmp/console-screenshots/, axe-core with no serious or critical
 * violation, no CSP violation).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_ARGS } from '../../src/browser/index.js';
import { CHROMIUM } from './chromium.js';
import { ROOT } from './process.js';
import type { TestOrg } from './server.js';

const SHOTS = path.join(ROOT, '.tmp', 'console-screenshots');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

export interface ConsoleBrowser {
  browser: Browser;
  page: Page;
  /** Screenshot as `name`, then axe-core and the CSP record of the page shown. */
  audit(name: string): Promise<void>;
  close(): Promise<void>;
}

/** Chromium with one page (1280×800 unless said) whose CSP violations are recorded before any page script runs. */
export async function openConsoleBrowser(viewport = { width: 1280, height: 800 }): Promise<ConsoleBrowser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport });
  await context.addInitScript(`
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
  `);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  if (process.env.CONSOLE_DEBUG) {
    page.on('console', (m) => process.stderr.write(`[console] ${m.text()}\n`));
    page.on('pageerror', (e) => process.stderr.write(`[pageerror] ${e.message}\n`));
    page.on('response', (r) => process.stderr.write(`[response] ${r.status()} ${r.url()}\n`));
  }
  mkdirSync(SHOTS, { recursive: true });
  return {
    browser,
    page,
    async audit(name: string) {
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
      await page.evaluate(AXE);
      const violations = (await page.evaluate('axe.run().then((r) => r.violations)')) as AxeViolation[];
      const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      // TEST_FIGURES=1 prints axe-core's findings per page by impact.
      if (process.env.TEST_FIGURES) {
        const byImpact = violations.map((v) => `${v.impact}:${v.id}`).join(' ') || 'none';
        process.stderr.write(`axe ${name}: ${violations.length} violation(s): ${byImpact}\n`);
      }
      expect(
        bad.map((v) => `${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
        `axe on ${name}`,
      ).to.deep.equal([]);
      const csp = (await page.evaluate('window.cspViolations')) as string[];
      expect(csp, `CSP violations on ${name}`).to.deep.equal([]);
    },
    async close() {
      await browser.close();
    },
  };
}

/** Signs `org` in through the console's sign-in form at `baseUrl`; resolves on the Overview page. */
export async function signIn(page: Page, baseUrl: string, org: TestOrg): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('Client id').fill(org.clientId);
  await page.getByLabel('Client secret').fill(org.clientSecret);
  await page.getByLabel('Organisation id').fill(org.orgId);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}
