// One decode step of single-head attention over a KV cache of 64 positions
// (head dimension 16): the new key and value are written at position %pos,
// then the query attends over the %pos + 1 cached positions, softmax(q . K /
// sqrt(16)) @ V. The context length is a size, not a shape: one compiled
// bundle serves every position below the cache's capacity, and a run checks
// %pos + 1 <= 64 before anything executes.
//
//   tang-run examples/kv_cache_decode.mlir --size arg5=9
//
// The differential tests and the GPU check run one bundle at three
// positions: the first, one inside, the last.
// sizes: arg5=0
// sizes: arg5=9
// sizes: arg5=63
func.func @main(%Kc: tensor<64x16xf32> {tang.donate}, %Vc: tensor<64x16xf32> {tang.donate},
                %k: tensor<16xf32>, %v: tensor<16xf32>, %q: tensor<16xf32>,
                %pos: index)
    -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xf32>) {
  // The cache with row %pos replaced (the size requirement below keeps
  // %pos inside the cache, so the drop policy never drops).
  %K = tang.scatter (%d) [16] into %Kc : tensor<64x16xf32> {
    %x = tang.read %k[%d] : tensor<16xf32>
    tang.put %x at [symbol(%pos), %d] drop : f32
  }
  %V = tang.scatter (%d) [16] into %Vc : tensor<64x16xf32> {
    %x = tang.read %v[%d] : tensor<16xf32>
    tang.put %x at [symbol(%pos), %d] drop : f32
  }
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  // Scaled scores of the %len cached positions.
  %s = tang.comprehension (%t) reduce (%d) [%len, 16] monoid(add) : tensor<?xf32> {
    %a = tang.read %q[%d] : tensor<16xf32>
    %b = tang.read %K[%t, %d] : tensor<64x16xf32>
    %scale = arith.constant 0.25 : f32
    %p = arith.mulf %a, %b : f32
    %ps = arith.mulf %p, %scale : f32
    tang.yield %ps : f32
  }
  %m = tang.comprehension reduce (%t) [%len] monoid(max) : tensor<f32> {
    %x = tang.read %s[%t] : tensor<?xf32>
    tang.yield %x : f32
  }
  %o = tang.comprehension (%d) [16] : tensor<16xf32> {
    %mx = tang.read %m[] : tensor<f32>
    %l = tang.comprehension reduce (%t) [%len] monoid(add) : f32 {
      %x = tang.read %s[%t] : tensor<?xf32>
      %c = arith.subf %x, %mx : f32
      %e = math.exp %c : f32
      tang.yield %e : f32
    }
    %acc = tang.comprehension reduce (%t) [%len] monoid(add) : f32 {
      %x = tang.read %s[%t] : tensor<?xf32>
      %c = arith.subf %x, %mx : f32
      %e = math.exp %c : f32
      %w = tang.read %V[%t, %d] : tensor<64x16xf32>
      %p = arith.mulf %e, %w : f32
      tang.yield %p : f32
    }
    %r = arith.divf %acc, %l : f32
    tang.yield %r : f32
  }
  return %K, %V, %o : tensor<64x16xf32>, tensor<64x16xf32>, tensor<16xf32>
}
