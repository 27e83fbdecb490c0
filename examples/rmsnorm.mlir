// RMSNorm over the last dimension, with a learned weight:
//
//   ms[i]   = (1/32) * sum_k X[i, k]^2
//   Y[i, j] = X[i, j] * rsqrt(ms[i] + eps) * w[j]      X, Y: 8x32, w: 32, eps = 1e-6
//
// The mean square is a reduction nested in the body of the elementwise map:
// it depends only on i (a scalar per row).
func.func @main(%X: tensor<8x32xf32>, %w: tensor<32xf32>) -> tensor<8x32xf32> {
  %Y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    // ss = sum_k X[i, k]^2
    %ss = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<8x32xf32>
      %x2 = arith.mulf %x, %x : f32
      tang.yield %x2 : f32
    }
    %n = arith.constant 32.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %ms = arith.divf %ss, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %r = math.rsqrt %mse : f32
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %wj = tang.read %w[%j] : tensor<32xf32>
    %xr = arith.mulf %x, %r : f32
    %y = arith.mulf %xr, %wj : f32
    tang.yield %y : f32
  }
  return %Y : tensor<8x32xf32>
}
