// LayerNorm over the last dimension, as separate comprehensions:
//
//   mu[i]    = (1/32) * sum_k X[i, k]
//   var[i]   = (1/32) * sum_k (X[i, k] - mu[i])^2
//   Y[i, j]  = (X[i, j] - mu[i]) * rsqrt(var[i] + eps) * gamma[j] + beta[j]
//
//   X, Y: 8x32, gamma, beta: 32, eps = 1e-5
func.func @main(%X: tensor<8x32xf32>, %gamma: tensor<32xf32>, %beta: tensor<32xf32>) -> tensor<8x32xf32> {
  // mu = row mean
  %sum = tang.comprehension (%i) reduce (%k) [8, 32] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%i, %k] : tensor<8x32xf32>
    tang.yield %x : f32
  }
  %mu = tang.comprehension (%i) [8] : tensor<8xf32> {
    %s = tang.read %sum[%i] : tensor<8xf32>
    %n = arith.constant 32.0 : f32
    %m = arith.divf %s, %n : f32
    tang.yield %m : f32
  }
  // var = row mean of squared deviations (two-pass, numerically stable)
  %var = tang.comprehension (%i) reduce (%k) [8, 32] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%i, %k] : tensor<8x32xf32>
    %m = tang.read %mu[%i] : tensor<8xf32>
    %d = arith.subf %x, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %n = arith.constant 32.0 : f32
    %t = arith.divf %d2, %n : f32
    tang.yield %t : f32
  }
  // Y = normalised X, scaled and shifted
  %Y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %m = tang.read %mu[%i] : tensor<8xf32>
    %v = tang.read %var[%i] : tensor<8xf32>
    %g = tang.read %gamma[%j] : tensor<32xf32>
    %b = tang.read %beta[%j] : tensor<32xf32>
    %eps = arith.constant 1.0e-5 : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %x, %m : f32
    %xn = arith.mulf %d, %r : f32
    %xg = arith.mulf %xn, %g : f32
    %y = arith.addf %xg, %b : f32
    tang.yield %y : f32
  }
  return %Y : tensor<8x32xf32>
}
