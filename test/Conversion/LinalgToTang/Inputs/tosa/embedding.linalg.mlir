// Generated from embedding.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt embedding.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @main(%arg0: tensor<1x32x8xf32>, %arg1: tensor<1x5xi32>) -> tensor<1x5x8xf32> {
    %c0 = arith.constant 0 : index
    %0 = tensor.empty() : tensor<1x5x8xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x5xi32>) outs(%0 : tensor<1x5x8xf32>) {
    ^bb0(%in: i32, %out: f32):
      %2 = arith.index_cast %in : i32 to index
      %3 = linalg.index 2 : index
      %extracted = tensor.extract %arg0[%c0, %2, %3] : tensor<1x32x8xf32>
      linalg.yield %extracted : f32
    } -> tensor<1x5x8xf32>
    return %1 : tensor<1x5x8xf32>
  }
}

