import { createRequire } from 'node:module';
import { sha256 } from './lib.js';

const require = createRequire(import.meta.url);
const converter = require('openapi-to-postmanv2') as {
  convert: (input: { type: 'json'; data: unknown }, options: Record<string, unknown>, cb: (err: Error | null, result: { result: boolean; reason?: string; output: { type: string; data: unknown }[] }) => void) => void;
};

/** Postman collection of the whole API, with deterministic ids so codegen:check is stable. */
export async function generatePostman(bundle: unknown): Promise<unknown> {
  const result = await new Promise<{ result: boolean; reason?: string; output: { data: unknown }[] }>((resolve, reject) =>
    converter.convert({ type: 'json', data: structuredClone(bundle) }, { folderStrategy: 'Tags', requestParametersResolution: 'Example', exampleParametersResolution: 'Example', includeAuthInfoInExample: true }, (err, res) => (err ? reject(err) : resolve(res))),
  );
  if (!result.result) throw new Error(`openapi-to-postmanv2: ${result.reason}`);
  const collection = result.output[0]!.data as Record<string, unknown>;
  return normaliseIds(collection, 'root');
}

function normaliseIds(value: unknown, trail: string): unknown {
  if (Array.isArray(value)) return value.map((v, i) => normaliseIds(v, `${trail}/${i}`));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if ((k === 'id' || k === '_postman_id') && typeof v === 'string') {
        const h = sha256(`${trail}/${k}`);
        out[k] = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
      } else out[k] = normaliseIds(v, `${trail}/${k}`);
    }
    return out;
  }
  return value;
}
