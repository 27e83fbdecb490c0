// Scaled dot-product attention with an ALiBi (attention with linear biases)
// positional bias, per batch b and head h:
//
//   S[b, h, i, j] = scale * sum_d Q[b, h, i, d] * K[b, h, j, d]
//                   + slopes[h] * (j - i)                           scale = 1/sqrt(8)
//   m[b, h, i]    = max_j S[b, h, i, j]
//   E[b, h, i, j] = exp(S[b, h, i, j] - m[b, h, i])
//   l[b, h, i]    = sum_j E[b, h, i, j]
//   P[b, h, i, j] = E[b, h, i, j] / l[b, h, i]
//   O[b, h, i, d] = sum_j P[b, h, i, j] * V[b, h, j, d]
//
//   Q, K, V, O: 2x4x16x8 (batch, heads, length, head dim); slopes: 4 (one per
//   head); S, E, P: 2x4x16x16. No causal mask: every query sees every key.
func.func @main(%Q: tensor<2x4x16x8xf32>, %K: tensor<2x4x16x8xf32>, %V: tensor<2x4x16x8xf32>,
                %slopes: tensor<4xf32>) -> tensor<2x4x16x8xf32> {
  // The per-head slope broadcast over (b, i, j): a view, no copy
  %slope = tang.view %slopes by affine_map<(b, h, i, j) -> (h)> : tensor<4xf32> to tensor<2x4x16x16xf32>

  // QK = Q K^T (K is read transposed: K[b, h, j, d])
  %QK = tang.comprehension (%b, %h, %i, %j) reduce (%d) [2, 4, 16, 16, 8] monoid(add) : tensor<2x4x16x16xf32> {
    %q = tang.read %Q[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
    %k = tang.read %K[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %qk = arith.mulf %q, %k : f32
    tang.yield %qk : f32
  }
  // S = scale * QK + slope[h] * (j - i)
  %S = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %qk = tang.read %QK[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %dim = arith.constant 8.0 : f32
    %scale = math.rsqrt %dim : f32
    %s = arith.mulf %qk, %scale : f32
    %sl = tang.read %slope[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %vi = tang.index %i : i32
    %vj = tang.index %j : i32
    %di = arith.subi %vj, %vi : i32
    %dist = arith.sitofp %di : i32 to f32
    %bias = arith.mulf %sl, %dist : f32
    %sb = arith.addf %s, %bias : f32
    tang.yield %sb : f32
  }
  // Softmax over j: max, exp(s - max), sum, divide
  %m = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(max) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %s : f32
  }
  %E = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %e = math.exp %z : f32
    tang.yield %e : f32
  }
  %l = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(add) : tensor<2x4x16xf32> {
    %e = tang.read %E[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %e : f32
  }
  %P = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %e = tang.read %E[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %li = tang.read %l[%b, %h, %i] : tensor<2x4x16xf32>
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
