import type { OperationInfo } from './bundle.js';
import { TS_HEADER } from './lib.js';

/** The operation table and the typed handler map (a missing handler fails to compile). */
export function generateOperations(ops: OperationInfo[]): string {
  const rows = ops.map(
    (o) =>
      `  ${o.operationId}: { method: '${o.method}', path: '${o.path}', expressPath: '${o.expressPath}', security: ${JSON.stringify(o.security)}, requestContentTypes: ${JSON.stringify(o.requestContentTypes)}, requestBodyRequired: ${o.requestBodyRequired}, tags: ${JSON.stringify(o.tags)}, source: '${o.source}' },`,
  );
  return [
    TS_HEADER,
    `export interface OperationMeta {`,
    `  readonly method: 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';`,
    `  readonly path: string;`,
    `  readonly expressPath: string;`,
    `  readonly security: readonly string[];`,
    `  readonly requestContentTypes: readonly string[];`,
    `  readonly requestBodyRequired: boolean;`,
    `  readonly tags: readonly string[];`,
    `  readonly source: string;`,
    `}`,
    ``,
    `export const operations = {`,
    ...rows,
    `} as const satisfies Record<string, OperationMeta>;`,
    ``,
    `export type OperationId = keyof typeof operations;`,
    `export const operationIds = Object.keys(operations) as OperationId[];`,
  ].join('\n');
}
