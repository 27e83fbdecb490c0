// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s

// tang.triangular_solve round-trips, with and without parallel dimensions.

// CHECK-LABEL: func.func @chunks
// CHECK: %[[X:.*]] = tang.triangular_solve %{{.*}}, %{{.*}} : tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>
// CHECK: return %[[X]] : tensor<2x3x4x8xf32>
func.func @chunks(%L: tensor<2x3x4x4xf32>, %Y: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %X = tang.triangular_solve %L, %Y : tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>
  return %X : tensor<2x3x4x8xf32>
}

// CHECK-LABEL: func.func @one
// CHECK: tang.triangular_solve %{{.*}}, %{{.*}} : tensor<5x5xf64>, tensor<5x1xf64>
func.func @one(%L: tensor<5x5xf64>, %Y: tensor<5x1xf64>) -> tensor<5x1xf64> {
  %X = tang.triangular_solve %L, %Y : tensor<5x5xf64>, tensor<5x1xf64>
  return %X : tensor<5x1xf64>
}
