// A dense layer with GELU, tanh approximation:
//
//   Y[i, j]  = sum_k X[i, k] * W[k, j] + b[j]         X: 16x32, W: 32x24, b: 24
//   Z[i, j]  = gelu(Y[i, j])
//   gelu(y)  = 0.5 * y * (1 + tanh(sqrt(2 / pi) * (y + 0.044715 * y^3)))
//
// Two comprehensions: the matmul (reduce k under add), then an elementwise
// epilogue (a map: no reduced indices, no monoid) that adds the bias
// (a broadcast read b[j]) and applies GELU.
func.func @main(%X: tensor<16x32xf32>, %W: tensor<32x24xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  // Y0 = X W
  %Y0 = tang.comprehension (%i, %j) reduce (%k) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
    %x = tang.read %X[%i, %k] : tensor<16x32xf32>
    %w = tang.read %W[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %x, %w : f32
    tang.yield %p : f32
  }
  // Z = gelu(Y0 + b)
  %Z = tang.comprehension (%i, %j) [16, 24] : tensor<16x24xf32> {
    %y0 = tang.read %Y0[%i, %j] : tensor<16x24xf32>
    %bj = tang.read %b[%j] : tensor<24xf32>
    %y = arith.addf %y0, %bj : f32
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.044715 : f32
    %k0 = arith.constant 0.7978845608028654 : f32   // sqrt(2 / pi)
    %y2 = arith.mulf %y, %y : f32
    %y3 = arith.mulf %y2, %y : f32
    %cy3 = arith.mulf %c, %y3 : f32
    %inner = arith.addf %y, %cy3 : f32
    %arg = arith.mulf %k0, %inner : f32
    %t = math.tanh %arg : f32
    %onept = arith.addf %one, %t : f32
    %hy = arith.mulf %half, %y : f32
    %z = arith.mulf %hy, %onept : f32
    tang.yield %z : f32
  }
  return %Z : tensor<16x24xf32>
}
