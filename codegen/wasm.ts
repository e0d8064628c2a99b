/**
 * generated/wasm/scan.ts: the WebAssembly vector scan of discovery's semantic ranking
 * (src/servers/sidekick/dots.ts), compiled from codegen/scan.wat with wabt (npm `wabt`, the
 * WebAssembly Binary Toolkit) and written as base64, so the service loads it without a build
 * step or a file read.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import wabtModule from 'wabt';
import { ROOT, TS_HEADER } from './lib.js';

export async function generateScanWasm(): Promise<string> {
  const wabt = await wabtModule();
  const source = readFileSync(path.join(ROOT, 'codegen', 'scan.wat'), 'utf8');
  const mod = wabt.parseWat('scan.wat', source, { simd: true });
  try {
    mod.validate();
    const { buffer } = mod.toBinary({ write_debug_names: false });
    return `${TS_HEADER}/** codegen/scan.wat, compiled (${buffer.length} bytes). */\nexport const SCAN_WASM = '${Buffer.from(buffer).toString('base64')}';\n`;
  } finally {
    mod.destroy();
  }
}
