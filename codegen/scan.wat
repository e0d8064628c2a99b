;; The vector scan of discovery's semantic ranking (src/servers/sidekick/dots.ts): the dot
;; product of one request vector with every row of a row-major matrix of float32, four lanes at a
;; time with WebAssembly SIMD, two accumulators per row. Compiled to generated/wasm/scan.ts by
;; `npm run codegen` (codegen/wasm.ts).
;;
;; dots(matrix, query, out, rows, dims): out[i] = sum over j of matrix[i * dims + j] * query[j].
;; Byte offsets into the exported memory, 16-byte aligned; dims a multiple of 8.
(module
  (memory (export "memory") 1)
  (func (export "dots") (param $matrix i32) (param $query i32) (param $out i32) (param $rows i32) (param $dims i32)
    (local $i i32) (local $j i32) (local $row i32) (local $bytes i32) (local $a v128) (local $b v128)
    (local.set $bytes (i32.shl (local.get $dims) (i32.const 2)))
    (local.set $row (local.get $matrix))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $i) (local.get $rows)))
        (local.set $a (v128.const f32x4 0 0 0 0))
        (local.set $b (v128.const f32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (block $row_done
          (loop $cols
            (br_if $row_done (i32.ge_u (local.get $j) (local.get $bytes)))
            (local.set $a
              (f32x4.add (local.get $a)
                (f32x4.mul
                  (v128.load (i32.add (local.get $row) (local.get $j)))
                  (v128.load (i32.add (local.get $query) (local.get $j))))))
            (local.set $b
              (f32x4.add (local.get $b)
                (f32x4.mul
                  (v128.load offset=16 (i32.add (local.get $row) (local.get $j)))
                  (v128.load offset=16 (i32.add (local.get $query) (local.get $j))))))
            (local.set $j (i32.add (local.get $j) (i32.const 32)))
            (br $cols)))
        (local.set $a (f32x4.add (local.get $a) (local.get $b)))
        (f32.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
            (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))
        (local.set $row (i32.add (local.get $row) (local.get $bytes)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows)))))
