import path from 'node:path';
import { readdirSync, statSync } from 'node:fs';

const TEST_ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** Every *.test.ts under test/. */
export function listTestFiles(dir = TEST_ROOT): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listTestFiles(full));
    else if (name.endsWith('.test.ts')) out.push(full);
  }
  return out;
}
