// Inclusive prefix sum (scan) as a comprehension over a triangular domain:
//
//   y[i] = sum_{k <= i} x[k] = sum_k select(k <= i, x[k], 0)      x, y: 64
//
// x is read at k (always in bounds); the mask selects on the value.
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
    %xk = tang.read %x[%k] : tensor<64xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vi : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %xk, %zero : f32
    tang.yield %v : f32
  }
  return %y : tensor<64xf32>
}
