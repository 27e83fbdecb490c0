// Grouped-query attention: 4 query heads share 2 key/value heads; query head
// h uses key/value head h floordiv 2.
//
//   Kx[b, h, j, d] = K[b, h floordiv 2, j, d]     (a view: no copy, no compute)
//   Vx[b, h, j, d] = V[b, h floordiv 2, j, d]
//   S[b, h, i, j]  = scale * sum_d Q[b, h, i, d] * Kx[b, h, j, d]   scale = 1/sqrt(8)
//   P = softmax_j(S)   (max, sum of exp, divide)
//   O[b, h, i, d]  = sum_j P[b, h, i, j] * Vx[b, h, j, d]
//
//   Q, O: 2x4x16x8; K, V: 2x2x16x8 (batch, heads, length, head dim)
func.func @main(%Q: tensor<2x4x16x8xf32>, %K: tensor<2x2x16x8xf32>, %V: tensor<2x2x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // Broadcast the 2 key/value heads to the 4 query heads.
  %Kx = tang.view %K by affine_map<(b, h, l, d) -> (b, h floordiv 2, l, d)> : tensor<2x2x16x8xf32> to tensor<2x4x16x8xf32>
  %Vx = tang.view %V by affine_map<(b, h, l, d) -> (b, h floordiv 2, l, d)> : tensor<2x2x16x8xf32> to tensor<2x4x16x8xf32>
  // S = scale * Q Kx^T
  %S = tang.comprehension (%b, %h, %i, %j) reduce (%d) [2, 4, 16, 16, 8] monoid(add) : tensor<2x4x16x16xf32> {
    %q = tang.read %Q[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
    %k = tang.read %Kx[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
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
  // O = P Vx
  %O = tang.comprehension (%b, %h, %i, %d) reduce (%j) [2, 4, 16, 8, 16] monoid(add) : tensor<2x4x16x8xf32> {
    %p = tang.read %P[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %v = tang.read %Vx[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2x4x16x8xf32>
}
