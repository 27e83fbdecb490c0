// Row softmax, written as the plain (unfused) chain of three comprehensions:
//
//   m[i]    = max_j X[i, j]
//   l[i]    = sum_j exp(X[i, j] - m[i])
//   Y[i, j] = exp(X[i, j] - m[i]) / l[i]          X, Y: 8x32
//
// Subtracting the row max keeps exp from overflowing; it does not change Y.
func.func @main(%X: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // m = row max
  %m = tang.comprehension (%i) reduce (%j) [8, 32] monoid(max) : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    tang.yield %x : f32
  }
  // l = row sum of exp(x - m)
  %l = tang.comprehension (%i) reduce (%j) [8, 32] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %mi = tang.read %m[%i] : tensor<8xf32>
    %d = arith.subf %x, %mi : f32
    %e = math.exp %d : f32
    tang.yield %e : f32
  }
  // Y = exp(x - m) / l
  %Y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %mi = tang.read %m[%i] : tensor<8xf32>
    %li = tang.read %l[%i] : tensor<8xf32>
    %d = arith.subf %x, %mi : f32
    %e = math.exp %d : f32
    %y = arith.divf %e, %li : f32
    tang.yield %y : f32
  }
  return %Y : tensor<8x32xf32>
}
