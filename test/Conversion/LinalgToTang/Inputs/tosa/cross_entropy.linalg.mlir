// Generated from cross_entropy.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt cross_entropy.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @main(%arg0: tensor<4x10xf32>, %arg1: tensor<4xi32>) -> tensor<1xf32> {
    %cst = arith.constant dense<2.500000e-01> : tensor<1x1xf32>
    %c0 = arith.constant 0 : index
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant -3.40282347E+38 : f32
    %0 = tensor.empty() : tensor<4xf32>
    %1 = linalg.fill ins(%cst_1 : f32) outs(%0 : tensor<4xf32>) -> tensor<4xf32>
    %reduced = linalg.reduce ins(%arg0 : tensor<4x10xf32>) outs(%1 : tensor<4xf32>) dimensions = [1] 
      (%in: f32, %init: f32) {
        %20 = arith.maximumf %in, %init : f32
        linalg.yield %20 : f32
      }
    %expanded = tensor.expand_shape %reduced [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %2 = tensor.empty() : tensor<4x10xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded : tensor<4x10xf32>, tensor<4x1xf32>) outs(%2 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %20 = arith.subf %in, %in_9 : f32
      linalg.yield %20 : f32
    } -> tensor<4x10xf32>
    %4 = tensor.empty() : tensor<4x10xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x10xf32>) outs(%4 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %20 = math.exp %in : f32
      linalg.yield %20 : f32
    } -> tensor<4x10xf32>
    %6 = tensor.empty() : tensor<4xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<4xf32>) -> tensor<4xf32>
    %reduced_2 = linalg.reduce ins(%5 : tensor<4x10xf32>) outs(%7 : tensor<4xf32>) dimensions = [1] 
      (%in: f32, %init: f32) {
        %20 = arith.addf %in, %init : f32
        linalg.yield %20 : f32
      }
    %expanded_3 = tensor.expand_shape %reduced_2 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %8 = tensor.empty() : tensor<4x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expanded_3 : tensor<4x1xf32>) outs(%8 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %20 = math.log %in : f32
      linalg.yield %20 : f32
    } -> tensor<4x1xf32>
    %10 = tensor.empty() : tensor<4x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%9, %expanded : tensor<4x1xf32>, tensor<4x1xf32>) outs(%10 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %20 = arith.addf %in, %in_9 : f32
      linalg.yield %20 : f32
    } -> tensor<4x1xf32>
    %expanded_4 = tensor.expand_shape %arg0 [[0], [1, 2]] output_shape [4, 10, 1] : tensor<4x10xf32> into tensor<4x10x1xf32>
    %expanded_5 = tensor.expand_shape %arg1 [[0, 1]] output_shape [4, 1] : tensor<4xi32> into tensor<4x1xi32>
    %12 = tensor.empty() : tensor<4x1x1xf32>
    %13 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_5 : tensor<4x1xi32>) outs(%12 : tensor<4x1x1xf32>) {
    ^bb0(%in: i32, %out: f32):
      %20 = linalg.index 0 : index
      %21 = arith.index_cast %in : i32 to index
      %extracted = tensor.extract %expanded_4[%20, %21, %c0] : tensor<4x10x1xf32>
      linalg.yield %extracted : f32
    } -> tensor<4x1x1xf32>
    %collapsed = tensor.collapse_shape %13 [[0], [1, 2]] : tensor<4x1x1xf32> into tensor<4x1xf32>
    %14 = tensor.empty() : tensor<4x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%11, %collapsed : tensor<4x1xf32>, tensor<4x1xf32>) outs(%14 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %20 = arith.subf %in, %in_9 : f32
      linalg.yield %20 : f32
    } -> tensor<4x1xf32>
    %16 = tensor.empty() : tensor<1xf32>
    %17 = linalg.fill ins(%cst_0 : f32) outs(%16 : tensor<1xf32>) -> tensor<1xf32>
    %reduced_6 = linalg.reduce ins(%15 : tensor<4x1xf32>) outs(%17 : tensor<1xf32>) dimensions = [0] 
      (%in: f32, %init: f32) {
        %20 = arith.addf %in, %init : f32
        linalg.yield %20 : f32
      }
    %expanded_7 = tensor.expand_shape %reduced_6 [[0, 1]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
    %18 = tensor.empty() : tensor<1x1xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%expanded_7, %cst : tensor<1x1xf32>, tensor<1x1xf32>) outs(%18 : tensor<1x1xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %20 = arith.mulf %in, %in_9 : f32
      linalg.yield %20 : f32
    } -> tensor<1x1xf32>
    %collapsed_8 = tensor.collapse_shape %19 [[0, 1]] : tensor<1x1xf32> into tensor<1xf32>
    return %collapsed_8 : tensor<1xf32>
  }
}

