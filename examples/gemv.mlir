// Matrix-vector product.
//
//   y[i] = sum_k A[i, k] * x[k]        A: 32x48, x: 48, y: 32
func.func @main(%A: tensor<32x48xf32>, %x: tensor<48xf32>) -> tensor<32xf32> {
  %y = tang.comprehension (%i) reduce (%k) [32, 48] monoid(add) : tensor<32xf32> {
    %a = tang.read %A[%i, %k] : tensor<32x48xf32>
    %v = tang.read %x[%k] : tensor<48xf32>
    %p = arith.mulf %a, %v : f32
    tang.yield %p : f32
  }
  return %y : tensor<32xf32>
}
