/**
 * The dot products of a request vector with every document vector of an organisation, the scan
 * behind discovery's vector scores (semantic.ts). At 10,000 tools of 512 dimensions that is 5.1
 * million multiply-adds per request, in a JavaScript loop a large share of a discover call with
 * embeddings. With WebAssembly SIMD (codegen/scan.wat, four float32 lanes at a time) the matrix
 * lives in the module's memory and the scan takes a fraction of the loop's time
 * (bench/discovery/README.md has the figures).
 *
 * The SIMD scan sums in float32, the JavaScript loop in float64, in a different order: the dot
 * products differ in the sixth or seventh significant digit, far below what moves a z-score
 * (test/unit/servers/sidekick/dots.test.ts). The JavaScript loop is used when the dimension is
 * not a multiple of 8, when WebAssembly SIMD is unavailable, or when the matrix does not fit in a
 * WebAssembly memory.
 */
import { SCAN_WASM } from '../../../generated/wasm/scan.js';

/** A matrix of `rows` × `dims` float32 (row-major, filled by the caller) and its scan. */
export interface DotScanner {
  readonly matrix: Float32Array;
  readonly simd: boolean;
  /** out[i] = row i · query, for every row. */
  run(query: Float32Array, out: Float32Array): void;
}

type DotsFn = (matrix: number, query: number, out: number, rows: number, dims: number) => void;

/** The part of the WebAssembly API used here (the project's TypeScript libs do not declare it). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const wasm = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;

let compiled: object | null | undefined;

/** The compiled scan module; null where WebAssembly SIMD is not available. */
function scanModule(): object | null {
  if (compiled === undefined) {
    try {
      compiled = wasm ? new wasm.Module(Buffer.from(SCAN_WASM, 'base64')) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

const PAGE = 65_536;
const align16 = (n: number): number => (n + 15) & ~15;
/** A WebAssembly memory is addressed with 32 bits, and engines cap it lower: stay well under. */
const MAX_BYTES = 2 ** 31;

function simdScanner(rows: number, dims: number): DotScanner | undefined {
  const mod = dims > 0 && dims % 8 === 0 ? scanModule() : null;
  if (!mod) return undefined;
  const queryAt = align16(rows * dims * 4);
  const outAt = align16(queryAt + dims * 4);
  const end = outAt + rows * 4;
  if (end > MAX_BYTES) return undefined;
  try {
    const instance = new wasm!.Instance(mod, {});
    const memory = instance.exports.memory as WasmMemory;
    const need = Math.ceil(end / PAGE) - memory.buffer.byteLength / PAGE;
    if (need > 0) memory.grow(need);
    // Taken after the growth, which detaches the earlier buffer; the memory never grows again.
    const { buffer } = memory;
    const dots = instance.exports.dots as DotsFn;
    const query = new Float32Array(buffer, queryAt, dims);
    const out = new Float32Array(buffer, outAt, rows);
    return {
      matrix: new Float32Array(buffer, 0, rows * dims),
      simd: true,
      run(q, into) {
        query.set(q);
        dots(0, queryAt, outAt, rows, dims);
        into.set(out);
      },
    };
  } catch {
    // Memory refused (RangeError): the JavaScript scan works on any size.
    return undefined;
  }
}

function jsScanner(rows: number, dims: number): DotScanner {
  const matrix = new Float32Array(rows * dims);
  const tail = dims - (dims % 4);
  return {
    matrix,
    simd: false,
    run(query, out) {
      for (let i = 0, at = 0; i < rows; i++, at += dims) {
        // Four accumulators: about twice as fast as one in V8.
        let d0 = 0;
        let d1 = 0;
        let d2 = 0;
        let d3 = 0;
        let j = 0;
        for (; j < tail; j += 4) {
          d0 += matrix[at + j]! * query[j]!;
          d1 += matrix[at + j + 1]! * query[j + 1]!;
          d2 += matrix[at + j + 2]! * query[j + 2]!;
          d3 += matrix[at + j + 3]! * query[j + 3]!;
        }
        for (; j < dims; j++) d0 += matrix[at + j]! * query[j]!;
        out[i] = d0 + d1 + d2 + d3;
      }
    },
  };
}

/**
 * A scanner for `rows` vectors of `dims` dimensions: SIMD when it can be, else JavaScript (`simd: false` forces it).
 */
export function dotScanner(rows: number, dims: number, opts: { simd?: boolean } = {}): DotScanner {
  return (opts.simd !== false ? simdScanner(rows, dims) : undefined) ?? jsScanner(rows, dims);
}
