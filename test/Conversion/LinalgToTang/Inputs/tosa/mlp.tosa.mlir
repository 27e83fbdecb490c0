func.func @main(%x: tensor<1x4x8xf32>, %w1: tensor<1x8x16xf32>, %b1: tensor<1x1x16xf32>, %w2: tensor<1x16x8xf32>, %b2: tensor<1x1x8xf32>) -> tensor<1x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w1, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %hb = tosa.add %h, %b1 : (tensor<1x4x16xf32>, tensor<1x1x16xf32>) -> tensor<1x4x16xf32>
  %s = tosa.sigmoid %hb : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %a = tosa.mul %hb, %s, %shift : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1xi8>) -> tensor<1x4x16xf32>
  %y = tosa.matmul %a, %w2, %zp, %zp : (tensor<1x4x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x8xf32>
  %z = tosa.add %y, %b2 : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  return %z : tensor<1x4x8xf32>
}
