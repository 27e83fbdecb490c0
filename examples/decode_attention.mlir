// Decode attention with grouped queries over a KV cache, the context
// length a size: 4 query heads share 2 key/value heads (head dimension 64,
// a cache of 1024 positions), and the query of each head attends over the
// first %pos + 1 positions:
//
//   s[h, j] = (sum_e q[h, e] K[h / 2, j, e]) / sqrt(64)
//   o[h, d] = sum_j softmax_j(s[h, j]) V[h / 2, j, d]     (j <= %pos)
//
// Written as scores, max, sum, probabilities and their weighted sum: fused
// and rewritten into one online-softmax reduction over the keys, it runs
// as flash-decoding (blocks take runs of keys; a second kernel combines
// their partial states by the same monoid), one bundle for every %pos.
//
//   tang-run examples/decode_attention.mlir --size arg3=300
//
// sizes: arg3=0
// sizes: arg3=300
// sizes: arg3=1023
func.func @main(%q: tensor<4x64xf32>, %K: tensor<2x1024x64xf32>, %V: tensor<2x1024x64xf32>, %pos: index) -> tensor<4x64xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [4, %len] : tensor<4x?xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<4x64xf32>
      %b = tang.read %K[%h floordiv 2, %j, %e] : tensor<2x1024x64xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %scale = arith.constant 0.125 : f32
    %r = arith.mulf %dot, %scale : f32
    tang.yield %r : f32
  }
  %m = tang.comprehension (%h) reduce (%j) [4, %len] monoid(max) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%h) reduce (%j) [4, %len] monoid(add) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %p = tang.comprehension (%h, %j) [4, %len] : tensor<4x?xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%h] : tensor<4xf32>
    %r = arith.divf %e, %zz : f32
    tang.yield %r : f32
  }
  %o = tang.comprehension (%h, %d) reduce (%j) [4, 64, %len] monoid(add) : tensor<4x64xf32> {
    %w = tang.read %p[%h, %j] : tensor<4x?xf32>
    %v = tang.read %V[%h floordiv 2, %j, %d] : tensor<2x1024x64xf32>
    %r = arith.mulf %w, %v : f32
    tang.yield %r : f32
  }
  return %o : tensor<4x64xf32>
}
