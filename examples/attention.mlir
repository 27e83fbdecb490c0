// Naive (unfused) scaled dot-product attention, per batch b and head h:
//
//   S[b, h, i, j] = scale * sum_d Q[b, h, i, d] * K[b, h, j, d]     scale = 1/sqrt(8)
//   m[b, h, i]    = max_j S[b, h, i, j]
//   l[b, h, i]    = sum_j exp(S[b, h, i, j] - m[b, h, i])
//   P[b, h, i, j] = exp(S[b, h, i, j] - m[b, h, i]) / l[b, h, i]
//   O[b, h, i, d] = sum_j P[b, h, i, j] * V[b, h, j, d]
//
//   Q, K, V, O: 2x4x16x8 (batch, heads, length, head dim); S, P: 2x4x16x16
func.func @main(%Q: tensor<2x4x16x8xf32>, %K: tensor<2x4x16x8xf32>, %V: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // S = scale * Q K^T (K is read transposed: K[b, h, j, d])
  %S = tang.comprehension (%b, %h, %i, %j) reduce (%d) [2, 4, 16, 16, 8] monoid(add) : tensor<2x4x16x16xf32> {
    %q = tang.read %Q[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
    %k = tang.read %K[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %dim = arith.constant 8.0 : f32
    %scale = math.rsqrt %dim : f32
    %qk = arith.mulf %q, %k : f32
    %s = arith.mulf %qk, %scale : f32
    tang.yield %s : f32
  }
  // m = row max of S
  %m = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(max) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %s : f32
  }
  // l = row sum of exp(S - m)
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
