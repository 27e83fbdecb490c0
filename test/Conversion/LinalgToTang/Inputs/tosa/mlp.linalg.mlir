// Generated from mlp.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt mlp.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
module {
  func.func @main(%arg0: tensor<1x4x8xf32>, %arg1: tensor<1x8x16xf32>, %arg2: tensor<1x1x16xf32>, %arg3: tensor<1x16x8xf32>, %arg4: tensor<1x1x8xf32>) -> tensor<1x4x8xf32> {
    %cst = arith.constant 1.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x4x16xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<1x4x8xf32>, tensor<1x8x16xf32>) outs(%1 : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
    %3 = tensor.empty() : tensor<1x4x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<1x4x16xf32>, tensor<1x1x16xf32>) outs(%3 : tensor<1x4x16xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.addf %in, %in_1 : f32
      linalg.yield %14 : f32
    } -> tensor<1x4x16xf32>
    %5 = tensor.empty() : tensor<1x4x16xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<1x4x16xf32>) outs(%5 : tensor<1x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.negf %in : f32
      %15 = math.exp %14 : f32
      %16 = arith.addf %15, %cst : f32
      %17 = arith.divf %cst, %16 : f32
      linalg.yield %17 : f32
    } -> tensor<1x4x16xf32>
    %7 = tensor.empty() : tensor<1x4x16xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4, %6 : tensor<1x4x16xf32>, tensor<1x4x16xf32>) outs(%7 : tensor<1x4x16xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.mulf %in, %in_1 : f32
      linalg.yield %14 : f32
    } -> tensor<1x4x16xf32>
    %9 = tensor.empty() : tensor<1x4x8xf32>
    %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    %11 = linalg.batch_matmul ins(%8, %arg3 : tensor<1x4x16xf32>, tensor<1x16x8xf32>) outs(%10 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    %12 = tensor.empty() : tensor<1x4x8xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %arg4 : tensor<1x4x8xf32>, tensor<1x1x8xf32>) outs(%12 : tensor<1x4x8xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.addf %in, %in_1 : f32
      linalg.yield %14 : f32
    } -> tensor<1x4x8xf32>
    return %13 : tensor<1x4x8xf32>
  }
}

