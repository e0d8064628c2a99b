/**
 * The replay script of an operator build (README.md in this folder): the cache entry's steps
 * written out as a `playwright_run` script — the body of an async function with a ready `page`
 * — so a caller can read what the operator does, keep it, change it and run it with
 * `browser-automation_playwright_run` (`code` = the file, `buildId` = the operator's). The text
 * typed into password fields is not written out (the script asks for it at the top), and files
 * the operator uploaded are not part of it (the script stops there, saying so).
 */
import type { RecordedStep } from './actions.js';
import type { CacheEntry } from './cache.js';

const js = (v: unknown) => JSON.stringify(v);

/**
 * After a step that may change the page: a short pause for its requests (the operator waits for the
 * network to go quiet).
 */
const PAUSE = 'await page.waitForTimeout(250);';

function line(s: RecordedStep, n: number, viewport: { width: number; height: number }, secrets: string[]): string[] {
  const at = s.selector !== undefined ? `page.locator(${js(s.selector)})` : undefined;
  const a = s.args;
  const need = (): string => {
    if (!at) throw new Error(`step ${n} has no locator`);
    return at;
  };
  switch (s.action) {
    case 'goto':
      return [`await page.goto(${js(a.url)});`];
    case 'back':
      return ['await page.goBack();'];
    case 'click':
      return [`await ${need()}.click();`, PAUSE];
    case 'fill': {
      let value = js(a.text);
      if (s.secret) {
        const name = `SECRET_${secrets.length + 1}`;
        secrets.push(`const ${name} = ''; // the password typed in step ${n} is not written out: put it here`);
        value = name;
      }
      return [
        `await ${need()}.fill(${value});`,
        ...(a.submit === true ? [`await ${need()}.press('Enter');`] : []),
        PAUSE,
      ];
    }
    case 'select': {
      const values = (a.values as string[]) ?? [];
      return [
        `await ${need()}.selectOption(${js(values.map((label) => ({ label })))}).catch(() => ${need()}.selectOption(${js(values)}));`,
        PAUSE,
      ];
    }
    case 'check':
      return [`await ${need()}.setChecked(${a.checked === true});`, PAUSE];
    case 'press':
      return [at ? `await ${at}.press(${js(a.key)});` : `await page.keyboard.press(${js(a.key)});`, PAUSE];
    case 'upload':
      return [
        `throw new Error(${js(`Step ${n} uploads ${((a.fileNames as string[]) ?? []).join(', ')}, which this script cannot: replay the task with operator_run (same cacheKey), which fetches filesToUpload.`)});`,
      ];
    case 'scroll': {
      const dir = String(a.direction ?? 'down');
      const horizontal = dir === 'left' || dir === 'right';
      const px =
        typeof a.pixels === 'number' ? a.pixels : Math.round((horizontal ? viewport.width : viewport.height) * 0.8);
      const d = (dir === 'up' || dir === 'left' ? -1 : 1) * px;
      return [
        ...(typeof a.x === 'number' && typeof a.y === 'number' ? [`await page.mouse.move(${a.x}, ${a.y});`] : []),
        `await page.mouse.wheel(${horizontal ? d : 0}, ${horizontal ? 0 : d});`,
      ];
    }
    case 'wait':
      return [`await page.waitForTimeout(${Math.round(Number(a.seconds ?? 1) * 1000)});`];
    case 'click_at':
      return [
        `await page.mouse.click(${Number(a.x)}, ${Number(a.y)}, ${js({ button: a.button ?? 'left', clickCount: a.clicks ?? 1 })});`,
        PAUSE,
      ];
    case 'type_text':
      return [`await page.keyboard.type(${js(a.text)});`, PAUSE];
    default:
      return [`// step ${n}: ${s.action} is not written out`];
  }
}

/** The script text of a cache entry; `label` names the task and build in its header. */
export function replayScript(
  entry: Pick<CacheEntry, 'startUrl' | 'steps' | 'result'>,
  label: { task: string; buildId: string; viewport: { width: number; height: number } },
): string {
  const body: string[] = [];
  const secrets: string[] = [];
  const reads: Array<{ name: string; text: string }> = [];
  if (entry.startUrl) body.push(`await page.goto(${js(entry.startUrl)});`);
  entry.steps.forEach((s, i) => {
    const n = i + 1;
    if (s.action === 'extract') {
      const name = `read${reads.length + 1}`;
      const from = s.selector !== undefined ? `page.locator(${js(s.selector)})` : "page.locator('body')";
      body.push(`const ${name} = (await ${from}.innerText()).trim();`);
      if (s.read) reads.push({ name, text: s.read });
      return;
    }
    body.push(...line(s, n, label.viewport, secrets));
  });
  // The result, with each recorded read replaced by what the script reads now.
  let parts: Array<string> = [js(entry.result)];
  for (const r of reads) {
    parts = parts.flatMap((p) => {
      if (!p.startsWith('"')) return [p];
      const text = JSON.parse(p) as string;
      const pieces = text.split(r.text);
      return pieces.flatMap((piece, k) => (k === 0 ? [js(piece)] : [r.name, js(piece)]));
    });
  }
  const result = parts.filter((p) => p !== '""').join(' + ') || '""';
  const header = [
    `// Replay script of operator build ${label.buildId}, generated by Switchyard from a successful run.`,
    `// Task: ${label.task.replace(/[\r\n]+/g, ' ')}`,
    `// Run it with browser-automation_playwright_run: { "code": <this file>, "buildId": "${label.buildId}" }`,
    `// (viewport ${label.viewport.width}x${label.viewport.height}: pass viewportWidth and viewportHeight for the same layout).`,
  ];
  const guard = secrets.length
    ? [
        ...secrets,
        ...secrets.map(
          (_, k) =>
            `if (!SECRET_${k + 1}) throw new Error('Put the password of SECRET_${k + 1} at the top of the script first.');`,
        ),
        '',
      ]
    : [];
  return `${[...header, '', ...guard, ...body, `return ${result};`].join('\n')}\n`;
}
