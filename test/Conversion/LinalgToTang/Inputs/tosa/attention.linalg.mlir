// Generated from attention.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt attention.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @main(%arg0: tensor<1x8x16xf32>, %arg1: tensor<1x8x16xf32>, %arg2: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
    %cst = arith.constant 1.000000e+00 : f32
    %cst_0 = arith.constant -3.40282347E+38 : f32
    %cst_1 = arith.constant dense<2.500000e-01> : tensor<1x1x1xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x16x8xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x8x16xf32>) outs(%0 : tensor<1x16x8xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<1x8x8xf32>
    %2 = linalg.fill ins(%cst_2 : f32) outs(%1 : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
    %3 = linalg.batch_matmul ins(%arg0, %transposed : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%2 : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
    %4 = tensor.empty() : tensor<1x8x8xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %cst_1 : tensor<1x8x8xf32>, tensor<1x1x1xf32>) outs(%4 : tensor<1x8x8xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %21 = arith.mulf %in, %in_5 : f32
      linalg.yield %21 : f32
    } -> tensor<1x8x8xf32>
    %6 = tensor.empty() : tensor<1x8xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %reduced = linalg.reduce ins(%5 : tensor<1x8x8xf32>) outs(%7 : tensor<1x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %21 = arith.maximumf %in, %init : f32
        linalg.yield %21 : f32
      }
    %expanded = tensor.expand_shape %reduced [[0], [1, 2]] output_shape [1, 8, 1] : tensor<1x8xf32> into tensor<1x8x1xf32>
    %8 = tensor.empty() : tensor<1x8x8xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %expanded : tensor<1x8x8xf32>, tensor<1x8x1xf32>) outs(%8 : tensor<1x8x8xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %21 = arith.subf %in, %in_5 : f32
      linalg.yield %21 : f32
    } -> tensor<1x8x8xf32>
    %10 = tensor.empty() : tensor<1x8x8xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<1x8x8xf32>) outs(%10 : tensor<1x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %21 = math.exp %in : f32
      linalg.yield %21 : f32
    } -> tensor<1x8x8xf32>
    %12 = tensor.empty() : tensor<1x8xf32>
    %13 = linalg.fill ins(%cst_2 : f32) outs(%12 : tensor<1x8xf32>) -> tensor<1x8xf32>
    %reduced_3 = linalg.reduce ins(%11 : tensor<1x8x8xf32>) outs(%13 : tensor<1x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %21 = arith.addf %in, %init : f32
        linalg.yield %21 : f32
      }
    %expanded_4 = tensor.expand_shape %reduced_3 [[0], [1, 2]] output_shape [1, 8, 1] : tensor<1x8xf32> into tensor<1x8x1xf32>
    %14 = tensor.empty() : tensor<1x8x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_4 : tensor<1x8x1xf32>) outs(%14 : tensor<1x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %21 = arith.divf %cst, %in : f32
      linalg.yield %21 : f32
    } -> tensor<1x8x1xf32>
    %16 = tensor.empty() : tensor<1x8x8xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %15 : tensor<1x8x8xf32>, tensor<1x8x1xf32>) outs(%16 : tensor<1x8x8xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %21 = arith.mulf %in, %in_5 : f32
      linalg.yield %21 : f32
    } -> tensor<1x8x8xf32>
    %18 = tensor.empty() : tensor<1x8x16xf32>
    %19 = linalg.fill ins(%cst_2 : f32) outs(%18 : tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %20 = linalg.batch_matmul ins(%17, %arg2 : tensor<1x8x8xf32>, tensor<1x8x16xf32>) outs(%19 : tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    return %20 : tensor<1x8x16xf32>
  }
}

