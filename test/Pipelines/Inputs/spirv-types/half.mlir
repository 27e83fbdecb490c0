// f16 buffers on 16-bit storage, computed in f32 (tang-lower-spirv-types.mlir).
func.func @main(%x: tensor<4x16xf16>) -> tensor<4xf16> {
  %y = tang.comprehension (%i) reduce (%j) [4, 16] monoid(add) : tensor<4xf16> {
    %v = tang.read %x[%i, %j] : tensor<4x16xf16>
    %e = math.exp %v : f16
    tang.yield %e : f16
  }
  return %y : tensor<4xf16>
}
