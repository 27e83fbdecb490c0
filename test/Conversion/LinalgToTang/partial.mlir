// RUN: tang-opt %s --convert-linalg-to-tang -verify-diagnostics | FileCheck %s

// A function that cannot be imported stays as it was, with a remark naming
// the first reason; the others are imported (--convert-linalg-to-tang=strict=1
// fails instead: errors.mlir).

// CHECK-LABEL: func.func @matmul
// CHECK: tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [4, 2, 8] monoid(add)
// CHECK-NOT: linalg.
func.func @matmul(%A: tensor<4x8xf32>, %B: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %C = linalg.matmul ins(%A, %B : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %C : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK: tensor.concat
// CHECK: linalg.map
// expected-remark @+1 {{convert-linalg-to-tang: @concat stays as it was: 'tensor.concat' at function level is not supported by convert-linalg-to-tang}}
func.func @concat(%X: tensor<4xf32>) -> tensor<8xf32> {
  %0 = tensor.concat dim(0) %X, %X : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %1 = linalg.map { math.exp } ins(%0 : tensor<8xf32>) outs(%e : tensor<8xf32>)
  return %1 : tensor<8xf32>
}

// A function that calls another keeps calling it under its name.
// CHECK-LABEL: func.func @caller
// CHECK: call @matmul
func.func @caller(%A: tensor<4x8xf32>, %B: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = func.call @matmul(%A, %B) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
