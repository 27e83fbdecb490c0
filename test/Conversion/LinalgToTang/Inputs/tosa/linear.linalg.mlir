// Generated from linear.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt linear.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
module {
  func.func @main(%arg0: tensor<1x4x8xf32>, %arg1: tensor<1x8x6xf32>, %arg2: tensor<1x1x6xf32>) -> tensor<1x4x6xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x4x6xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<1x4x8xf32>, tensor<1x8x6xf32>) outs(%1 : tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
    %3 = tensor.empty() : tensor<1x4x6xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<1x4x6xf32>, tensor<1x1x6xf32>) outs(%3 : tensor<1x4x6xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %5 = arith.addf %in, %in_0 : f32
      linalg.yield %5 : f32
    } -> tensor<1x4x6xf32>
    return %4 : tensor<1x4x6xf32>
  }
}

