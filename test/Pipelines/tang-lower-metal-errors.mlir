// RUN: not tang-opt %s --tang-lower-metal -o /dev/null 2>&1 | FileCheck %s

// Metal has no 64-bit float: a located diagnostic naming the feature.
// CHECK: tang-lower-metal-errors.mlir:[[@LINE+2]]:8: error: 'gpu.func' op uses f64: Metal has no 64-bit float
func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
  %y = tang.comprehension (%i) [8] : tensor<8xf64> {
    %v = tang.read %x[%i] : tensor<8xf64>
    tang.yield %v : f64
  }
  return %y : tensor<8xf64>
}
