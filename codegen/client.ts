/**
 * `generated/openapi/client.ts`: the typed SDK of the public API, the small `openapi-fetch`
 * client over the `paths` openapi-typescript made from the bundle, plus a named type for every
 * component schema. The web console (console/) is its first user.
 */
import { TS_HEADER } from './lib.js';

/** Schema names that would hide a global of the same name get an `Api` prefix (`Error` → `ApiError`). */
const GLOBALS = new Set(['Error', 'Response', 'Request', 'Headers', 'File', 'Blob', 'Event']);
const typeName = (n: string): string => (GLOBALS.has(n) ? `Api${n}` : n);

export function generateClient(schemaNames: string[]): string {
  const names = [...schemaNames].sort();
  return `${TS_HEADER}import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './types.js';

export type { paths, components, operations, Middleware };

/** A client of the Switchyard API: \`client.GET('/v1/runs', { params: { query } })\`. */
export type SwitchyardClient = Client<paths>;

/** A client for the API at \`baseUrl\` (the service's own origin when it is empty). */
export function createSwitchyardClient(options: ClientOptions = {}): SwitchyardClient {
  return createClient<paths>(options);
}

${names.map((n) => `export type ${typeName(n)} = components['schemas']['${n}'];`).join('\n')}
`;
}
