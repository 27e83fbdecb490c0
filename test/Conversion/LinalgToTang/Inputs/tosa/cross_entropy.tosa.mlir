func.func @main(%x: tensor<4x10xf32>, %t: tensor<4xi32>) -> tensor<1xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %d = tosa.sub %x, %m : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  %e = tosa.exp %d : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %s = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %ls = tosa.log %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %lse = tosa.add %ls, %m : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %s3 = tosa.const_shape {values = dense<[4, 10, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %x3 = tosa.reshape %x, %s3 : (tensor<4x10xf32>, !tosa.shape<3>) -> tensor<4x10x1xf32>
  %s2 = tosa.const_shape {values = dense<[4, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %t2 = tosa.reshape %t, %s2 : (tensor<4xi32>, !tosa.shape<2>) -> tensor<4x1xi32>
  %picked = tosa.gather %x3, %t2 : (tensor<4x10x1xf32>, tensor<4x1xi32>) -> tensor<4x1x1xf32>
  %p2 = tosa.reshape %picked, %s2 : (tensor<4x1x1xf32>, !tosa.shape<2>) -> tensor<4x1xf32>
  %nll = tosa.sub %lse, %p2 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %tot = tosa.reduce_sum %nll {axis = 0 : i32} : (tensor<4x1xf32>) -> tensor<1x1xf32>
  %q = "tosa.const"() <{values = dense<0.25> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %tot, %q, %shift : (tensor<1x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<1x1xf32>
  %s1 = tosa.const_shape {values = dense<[1]> : tensor<1xindex>} : () -> !tosa.shape<1>
  %r = tosa.reshape %mean, %s1 : (tensor<1x1xf32>, !tosa.shape<1>) -> tensor<1xf32>
  return %r : tensor<1xf32>
}
