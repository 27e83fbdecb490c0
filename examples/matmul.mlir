// Matrix multiplication.
//
//   C[i, j] = sum_k A[i, k] * B[k, j]        A: 16x32, B: 32x24, C: 16x24
//
// One comprehension: (i, j) are parallel (they index C), k is reduced under
// the `add` monoid.
func.func @main(%A: tensor<16x32xf32>, %B: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
    %a = tang.read %A[%i, %k] : tensor<16x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<16x24xf32>
}
