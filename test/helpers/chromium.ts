/**
 * Browser tests need Debian's Chromium (/usr/bin/chromium, or BROWSER_EXECUTABLE). On CI it is
 * mandatory (scripts/ensure-services.sh installs it); elsewhere a missing Chromium skips the
 * suite with a note saying how to get it.
 */
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.BROWSER_EXECUTABLE || '/usr/bin/chromium';

/** Call first in a browser suite's `before` hook. */
export function requireChromium(ctx: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI === 'true') throw new Error(`Chromium is required on CI but ${CHROMIUM} does not exist`);
  process.stderr.write(`\nNOTE: ${CHROMIUM} is missing; the browser automation tests are skipped (apt-get install -y chromium, or scripts/ensure-services.sh).\n`);
  ctx.skip();
}
