func.func @main(%x: tensor<1x4x8xf32>, %w: tensor<1x8x6xf32>, %b: tensor<1x1x6xf32>) -> tensor<1x4x6xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  %z = tosa.add %y, %b : (tensor<1x4x6xf32>, tensor<1x1x6xf32>) -> tensor<1x4x6xf32>
  return %z : tensor<1x4x6xf32>
}
