// RUN: not tang-opt %s -split-input-file --tang-grad 2>/dev/null | FileCheck %s
// RUN: tang-opt %s -split-input-file --tang-grad -verify-diagnostics -o /dev/null

// The gradient of a tensor scan of affine maps: a tensor scan of the
// transposed transitions (read at (T - u) mod T, the rows and columns
// swapped) and the states' cotangents (read at T - 1 - u), under the same
// monoid; dA sums L_t[i, j] S_{t-1}[k, j] over j with S_{-1} the init's.

// CHECK-LABEL: func.func @states_grad
// CHECK: tang.read %arg0[%[[P:.*]], (-%[[U:.*]]) mod 5, %[[J:.*]], %[[I:.*]]] : tensor<4x5x2x2xf32>
// CHECK: tang.read %arg4[%{{.*}}, -%{{.*}} + 4, %{{.*}}, %{{.*}}] : tensor<4x5x2x3xf32>
// CHECK: %{{.*}}:2 = tang.tensor_scan @affine(
// CHECK: reduce
// CHECK: fill(0.000000e+00)
// CHECK: arith.select
tang.monoid @affine : [tensor<2x2xf32>, tensor<2x3xf32>] identity [] {
^bb0(%a1: tensor<2x2xf32>, %b1: tensor<2x3xf32>, %a2: tensor<2x2xf32>, %b2: tensor<2x3xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [2, 2, 2] monoid(add) : tensor<2x2xf32> {
    %x = tang.read %a2[%i, %k] : tensor<2x2xf32>
    %y = tang.read %a1[%k, %j] : tensor<2x2xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %b = tang.comprehension (%i, %j) [2, 3] : tensor<2x3xf32> {
    %s = tang.comprehension reduce (%k) [2] monoid(add) : f32 {
      %x = tang.read %a2[%i, %k] : tensor<2x2xf32>
      %y = tang.read %b1[%k, %j] : tensor<2x3xf32>
      %p = arith.mulf %y, %x : f32
      tang.yield %p : f32
    }
    %z = tang.read %b2[%i, %j] : tensor<2x3xf32>
    %r = arith.addf %z, %s : f32
    tang.yield %r : f32
  }
  tang.yield %a, %b : tensor<2x2xf32>, tensor<2x3xf32>
}
func.func @states(%A: tensor<4x5x2x2xf32>, %B: tensor<4x5x2x3xf32>, %I: tensor<4x2x2xf32>, %S0: tensor<4x2x3xf32>) -> tensor<4x5x2x3xf32> {
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<4x5x2x2xf32>, tensor<4x5x2x3xf32>) init(%I, %S0 : tensor<4x2x2xf32>, tensor<4x2x3xf32>) -> tensor<4x5x2x2xf32>, tensor<4x5x2x3xf32>
  return %S : tensor<4x5x2x3xf32>
}

// -----

tang.monoid @matmul : [tensor<2x2xf32>] identity [] {
^bb0(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>):
  %c = tang.comprehension (%i, %j) reduce (%k) [2, 2, 2] monoid(add) : tensor<2x2xf32> {
    %x = tang.read %a[%i, %k] : tensor<2x2xf32>
    %y = tang.read %b[%k, %j] : tensor<2x2xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  tang.yield %c : tensor<2x2xf32>
}
func.func @products(%X: tensor<5x2x2xf32>) -> tensor<5x2x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op scans under a tensor monoid --tang-grad has no derivative rule for: it differentiates the composition of affine maps (S -> A S + B)}}
  %P = tang.tensor_scan @matmul(%X : tensor<5x2x2xf32>) -> tensor<5x2x2xf32>
  return %P : tensor<5x2x2xf32>
}
