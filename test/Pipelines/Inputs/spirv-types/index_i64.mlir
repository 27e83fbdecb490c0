// tang.index as f32 (through i32) and as i64 (Int64) (tang-lower-spirv-types.mlir).
func.func @main(%x: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xf32>) {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    %n = tang.index %i : i64
    %t = arith.trunci %n : i64 to i32
    %w = arith.addi %v, %t : i32
    tang.yield %w : i32
  }
  %z = tang.comprehension (%i) [8] : tensor<8xf32> {
    %f = tang.index %i : f32
    tang.yield %f : f32
  }
  return %y, %z : tensor<8xi32>, tensor<8xf32>
}
