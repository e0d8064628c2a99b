/**
 * The vector scan of semantic ranking (src/servers/sidekick/dots.ts): the WebAssembly SIMD scan
 * gives the JavaScript loop's dot products to float32 precision, on the dimensions real
 * embedding models use, and the JavaScript loop serves any other dimension.
 */
import { expect } from 'chai';
import { dotScanner } from '../../../../src/servers/sidekick/dots.js';

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** The same random rows in a SIMD and a JavaScript scanner, and one query. */
function pair(rows: number, dims: number, seed: number) {
  const r = random(seed);
  const simd = dotScanner(rows, dims);
  const js = dotScanner(rows, dims, { simd: false });
  for (let i = 0; i < rows * dims; i++) simd.matrix[i] = js.matrix[i] = r();
  const query = Float32Array.from({ length: dims }, r);
  return { simd, js, query };
}

describe('discovery vector scan', () => {
  for (const dims of [512, 768, 1536]) {
    it(`SIMD and JavaScript give the same dot products for ${dims} dimensions`, () => {
      const rows = 1_000;
      const { simd, js, query } = pair(rows, dims, dims);
      expect(simd.simd, 'WebAssembly SIMD on Node 20 and 24').to.equal(true);
      expect(js.simd).to.equal(false);
      const a = new Float32Array(rows);
      const b = new Float32Array(rows);
      simd.run(query, a);
      js.run(query, b);
      for (let i = 0; i < rows; i++) {
        // Each dot product by hand, in float64.
        let exact = 0;
        for (let j = 0; j < dims; j++) exact += js.matrix[i * dims + j]! * query[j]!;
        expect(b[i]).to.be.closeTo(exact, 1e-5);
        expect(a[i]).to.be.closeTo(exact, 1e-4);
      }
      // A second query reuses the module's memory.
      const again = Float32Array.from(query, (x) => -x);
      simd.run(again, a);
      expect(a[0]).to.be.closeTo(-b[0]!, 1e-4);
    });
  }

  it('a dimension that is not a multiple of 8, and an empty matrix, use the JavaScript loop', () => {
    const { simd, query } = pair(10, 13, 1);
    expect(simd.simd).to.equal(false);
    const out = new Float32Array(10);
    simd.run(query, out);
    let exact = 0;
    for (let j = 0; j < 13; j++) exact += simd.matrix[j]! * query[j]!;
    expect(out[0]).to.be.closeTo(exact, 1e-6);
    const empty = dotScanner(0, 512);
    empty.run(new Float32Array(512), new Float32Array(0));
    expect(empty.matrix.length).to.equal(0);
  });
});
