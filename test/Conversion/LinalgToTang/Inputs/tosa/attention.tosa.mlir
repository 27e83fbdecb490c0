func.func @main(%q: tensor<1x8x16xf32>, %k: tensor<1x8x16xf32>, %v: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<1x8x16xf32>) -> tensor<1x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8xf32>
  %scale = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ss = tosa.mul %s, %scale, %shift : (tensor<1x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x8x8xf32>
  %m = tosa.reduce_max %ss {axis = 2 : i32} : (tensor<1x8x8xf32>) -> tensor<1x8x1xf32>
  %d = tosa.sub %ss, %m : (tensor<1x8x8xf32>, tensor<1x8x1xf32>) -> tensor<1x8x8xf32>
  %e = tosa.exp %d : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<1x8x8xf32>) -> tensor<1x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<1x8x8xf32>, tensor<1x8x1xf32>, tensor<1xi8>) -> tensor<1x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<1x8x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  return %o : tensor<1x8x16xf32>
}
