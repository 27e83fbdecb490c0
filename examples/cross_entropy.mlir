// Softmax cross-entropy of logits X against target distributions T, written
// as the plain chain (row max, sum of exp, log-sum-exp, weighted sum):
//
//   m[i]    = max_j X[i, j]
//   l[i]    = sum_j exp(X[i, j] - m[i])
//   loss[i] = sum_j T[i, j] * (m[i] + log(l[i]) - X[i, j])      X, T: 8x32
//
// --tang-fuse --tang-online-softmax turns m and l into one single-pass
// softmax_norm reduction nested in the loss.
func.func @main(%X: tensor<8x32xf32>, %T: tensor<8x32xf32>) -> tensor<8xf32> {
  %m = tang.comprehension (%i) reduce (%j) [8, 32] monoid(max) : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    tang.yield %x : f32
  }
  %l = tang.comprehension (%i) reduce (%j) [8, 32] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %mi = tang.read %m[%i] : tensor<8xf32>
    %d = arith.subf %x, %mi : f32
    %e = math.exp %d : f32
    tang.yield %e : f32
  }
  %loss = tang.comprehension (%i) reduce (%j) [8, 32] monoid(add) : tensor<8xf32> {
    %mi = tang.read %m[%i] : tensor<8xf32>
    %li = tang.read %l[%i] : tensor<8xf32>
    %g = math.log %li : f32
    %lse = arith.addf %mi, %g : f32
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %t = tang.read %T[%i, %j] : tensor<8x32xf32>
    %nl = arith.subf %lse, %x : f32
    %w = arith.mulf %t, %nl : f32
    tang.yield %w : f32
  }
  return %loss : tensor<8xf32>
}
