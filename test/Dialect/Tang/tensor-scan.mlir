// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s

// A tensor monoid (the composition of affine maps S -> A S + B on 3x2
// states) and tang.tensor_scan round-trip, with and without init.

// CHECK-LABEL: tang.monoid @affine : [tensor<3x3xf32>, tensor<3x2xf32>] identity [] {
// CHECK: tang.comprehension
// CHECK: tang.yield %{{.*}}, %{{.*}} : tensor<3x3xf32>, tensor<3x2xf32>
tang.monoid @affine : [tensor<3x3xf32>, tensor<3x2xf32>] identity [] {
^bb0(%a1: tensor<3x3xf32>, %b1: tensor<3x2xf32>, %a2: tensor<3x3xf32>, %b2: tensor<3x2xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [3, 3, 3] monoid(add) : tensor<3x3xf32> {
    %x = tang.read %a2[%i, %k] : tensor<3x3xf32>
    %y = tang.read %a1[%k, %j] : tensor<3x3xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %b = tang.comprehension (%i, %j) reduce (%k) [3, 2, 3] monoid(add) : tensor<3x2xf32> {
    %x = tang.read %a2[%i, %k] : tensor<3x3xf32>
    %y = tang.read %b1[%k, %j] : tensor<3x2xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %s = tang.comprehension (%i, %j) [3, 2] : tensor<3x2xf32> {
    %x = tang.read %b[%i, %j] : tensor<3x2xf32>
    %y = tang.read %b2[%i, %j] : tensor<3x2xf32>
    %p = arith.addf %x, %y : f32
    tang.yield %p : f32
  }
  tang.yield %a, %s : tensor<3x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @scan
// CHECK: tang.tensor_scan @affine(%{{.*}}, %{{.*}} : tensor<4x5x3x3xf32>, tensor<4x5x3x2xf32>) -> tensor<4x5x3x3xf32>, tensor<4x5x3x2xf32>
// CHECK: tang.tensor_scan @affine(%{{.*}}, %{{.*}} : tensor<5x3x3xf32>, tensor<5x3x2xf32>) init(%{{.*}}, %{{.*}} : tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<5x3x3xf32>, tensor<5x3x2xf32>
func.func @scan(%A: tensor<4x5x3x3xf32>, %B: tensor<4x5x3x2xf32>,
                %A1: tensor<5x3x3xf32>, %B1: tensor<5x3x2xf32>,
                %I: tensor<3x3xf32>, %S0: tensor<3x2xf32>)
    -> (tensor<4x5x3x2xf32>, tensor<5x3x2xf32>) {
  %pa, %pb = tang.tensor_scan @affine(%A, %B : tensor<4x5x3x3xf32>, tensor<4x5x3x2xf32>) -> tensor<4x5x3x3xf32>, tensor<4x5x3x2xf32>
  %qa, %qb = tang.tensor_scan @affine(%A1, %B1 : tensor<5x3x3xf32>, tensor<5x3x2xf32>) init(%I, %S0 : tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<5x3x3xf32>, tensor<5x3x2xf32>
  return %pb, %qb : tensor<4x5x3x2xf32>, tensor<5x3x2xf32>
}
