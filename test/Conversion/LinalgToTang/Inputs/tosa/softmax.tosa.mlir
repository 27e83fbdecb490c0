func.func @main(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %m : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  %e = tosa.exp %d : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %r = tosa.reciprocal %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %e, %r, %shift : (tensor<4x10xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
