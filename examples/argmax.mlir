// Row-wise max and argmax:
//
//   v[i]   = max_j X[i, j]
//   idx[i] = the smallest j with X[i, j] = v[i]         X: 8x32; v: 8 (f32); idx: 8 (i32)
//
// The argmax monoid reduces (value, index) pairs; the body yields the value
// and its column index as an i32 (tang.index).
func.func @main(%X: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %v, %idx = tang.comprehension (%i) reduce (%j) [8, 32] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %vj = tang.index %j : i32
    tang.yield %x, %vj : f32, i32
  }
  return %v, %idx : tensor<8xf32>, tensor<8xi32>
}
