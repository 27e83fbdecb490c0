// Row-wise log-sum-exp through the softmax normaliser monoid:
//
//   (m[i], l[i]) = (max_j X[i, j], sum_j exp(X[i, j] - m[i]))     (one pass)
//   y[i]         = m[i] + log(l[i]) = log sum_j exp(X[i, j])
//
//   X: 8x32; y: 8
func.func @main(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  // softmax_norm yields x and reduces the pair (running max, rescaled sum).
  %m, %l = tang.comprehension (%i) reduce (%j) [8, 32] monoid(softmax_norm) : tensor<8xf32>, tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    tang.yield %x : f32
  }
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %mi = tang.read %m[%i] : tensor<8xf32>
    %li = tang.read %l[%i] : tensor<8xf32>
    %ll = math.log %li : f32
    %r = arith.addf %mi, %ll : f32
    tang.yield %r : f32
  }
  return %y : tensor<8xf32>
}
