// Causal scaled dot-product attention: query i attends to keys j <= i only.
//
//   S[b, h, i, j] = scale * sum_d Q[b, h, i, d] * K[b, h, j, d]   if j <= i
//                 = -inf                                          otherwise
//   P[b, h, i, j] = exp(S - m) / l,  m = max_j S,  l = sum_j exp(S - m)
//   O[b, h, i, d] = sum_j P[b, h, i, j] * V[b, h, j, d]
//
//   scale = 1/sqrt(8); Q, K, V, O: 2x4x16x8 (batch, heads, length, head dim)
//
// The mask is applied to the score, not to the read: K is read at j for every
// (i, j), which is always in bounds, and the score is replaced by -inf where
// j > i, so exp(-inf - m) = 0 drops it from the softmax. The diagonal j = i
// is always kept, so every row has a finite max.
func.func @main(%Q: tensor<2x4x16x8xf32>, %K: tensor<2x4x16x8xf32>, %V: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // S = masked scale * Q K^T: a map whose body holds the dot product as a
  // nested scalar reduction, then selects on the causal mask.
  %S = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %dot = tang.comprehension reduce (%d) [8] monoid(add) : f32 {
      %q = tang.read %Q[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
      %k = tang.read %K[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
      %qk = arith.mulf %q, %k : f32
      tang.yield %qk : f32
    }
    %dim = arith.constant 8.0 : f32
    %scale = math.rsqrt %dim : f32
    %s = arith.mulf %dot, %scale : f32
    // keep = (j <= i)
    %vi = tang.index %i : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %vi : i32
    %ninf = arith.constant 0xFF800000 : f32   // -inf
    %sm = arith.select %keep, %s, %ninf : f32
    tang.yield %sm : f32
  }
  // m = row max of S
  %m = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(max) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %s : f32
  }
  // l = row sum of exp(S - m); masked entries contribute exp(-inf) = 0
  %l = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(add) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %e = math.exp %z : f32
    tang.yield %e : f32
  }
  // P = exp(S - m) / l
  %P = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x4x16xf32>
    %li = tang.read %l[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %e = math.exp %z : f32
    %p = arith.divf %e, %li : f32
    tang.yield %p : f32
  }
  // O = P V
  %O = tang.comprehension (%b, %h, %i, %d) reduce (%j) [2, 4, 16, 8, 16] monoid(add) : tensor<2x4x16x8xf32> {
    %p = tang.read %P[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %v = tang.read %V[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2x4x16x8xf32>
}
