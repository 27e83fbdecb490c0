// Generated from conv.tosa.mlir by upstream MLIR 22 (test_tosa_import.py checks it):
//   mlir-opt conv.tosa.mlir --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)"
#map = affine_map<(d0, d1, d2, d3) -> (d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @main(%arg0: tensor<1x8x8x3xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %padded = tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0] {
    ^bb0(%arg3: index, %arg4: index, %arg5: index, %arg6: index):
      tensor.yield %cst : f32
    } : tensor<1x8x8x3xf32> to tensor<1x10x10x3xf32>
    %0 = tensor.empty() : tensor<1x8x8x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<4xf32>) outs(%0 : tensor<1x8x8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x8x8x4xf32>
    %2 = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %arg1 : tensor<1x10x10x3xf32>, tensor<4x3x3x3xf32>) outs(%1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    return %2 : tensor<1x8x8x4xf32>
  }
}

