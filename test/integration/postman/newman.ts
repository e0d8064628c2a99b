/**
 * newman 6.2.2 driven programmatically, with the few summary fields the Postman tests read
 * (newman ships no TypeScript types).
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const newman = require('newman') as {
  run(options: Record<string, unknown>, done: (err: Error | null, summary: NewmanSummary) => void): unknown;
};

export const COLLECTION_FILE = new URL(
  '../../../generated/postman/switchyard.postman_collection.json',
  import.meta.url,
);

export interface NewmanExecution {
  item: { id: string; name: string };
  response?: { code: number };
  assertions?: { assertion: string; error?: { message: string } }[];
  requestError?: { message: string };
}

export interface NewmanSummary {
  run: {
    stats: Record<'requests' | 'assertions' | 'testScripts' | 'prerequestScripts', { total: number; failed: number }>;
    failures: { error: { message: string; test?: string }; source?: { name?: string }; at?: string }[];
    executions: NewmanExecution[];
    timings: { started: number; completed: number };
  };
}

export interface CollectionItem {
  id: string;
  name: string;
  item?: CollectionItem[];
  request?: Record<string, any>;
  event?: { listen: string; script: { exec: string[] } }[];
}

export function loadCollection(): {
  item: CollectionItem[];
  variable: { key: string; value: string }[];
  auth: any;
  event: any[];
} {
  return JSON.parse(readFileSync(COLLECTION_FILE, 'utf8'));
}

/** Every request of the collection, with the folder it sits in. */
export function requestsOf(collection: { item: CollectionItem[] }): (CollectionItem & { folder: string })[] {
  return collection.item.flatMap((folder) => (folder.item ?? []).map((i) => ({ ...i, folder: folder.name })));
}

export function runNewman(collection: unknown, environmentFile: string): Promise<NewmanSummary> {
  return new Promise((resolve, reject) => {
    newman.run({ collection, environment: environmentFile, reporters: [], timeoutRequest: 30_000 }, (err, summary) =>
      err ? reject(err) : resolve(summary),
    );
  });
}

/** One line per failed assertion or request error, for the assertion message. */
export function describeFailures(summary: NewmanSummary): string {
  return summary.run.failures
    .map((f) => `${f.source?.name ?? '?'}: ${f.error.test ? `[${f.error.test}] ` : ''}${f.error.message}`)
    .join('\n');
}
