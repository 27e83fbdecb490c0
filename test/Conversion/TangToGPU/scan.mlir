// RUN: tang-opt %s --convert-tang-to-gpu | FileCheck %s

// A scan: one thread per row (4), a loop along the scan index carrying the
// monoid's carrier (here (A, B) of the affine-map monoid) from its identity,
// every prefix stored. The combine is the user monoid's body, in order.
// CHECK-LABEL: gpu.func @recurrence_k0
// CHECK-SAME: known_block_size = array<i32: 4, 1, 1>
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[ONE]], %[[B:.*]] = %[[ZERO]]) -> (f32, f32)
// CHECK: %[[AT:.*]] = memref.load %{{.*}}[%{{.*}}, %[[T]]] : memref<4x64xf32>
// CHECK: %[[XT:.*]] = memref.load %{{.*}}[%{{.*}}, %[[T]]] : memref<4x64xf32>
// CHECK: %[[NA:.*]] = arith.mulf %[[A]], %[[AT]] : f32
// CHECK: %[[AB:.*]] = arith.mulf %[[AT]], %[[B]] : f32
// CHECK: %[[NB:.*]] = arith.addf %[[AB]], %[[XT]] : f32
// CHECK: memref.store %[[NB]], %{{.*}}[%{{.*}}, %[[T]]] : memref<4x64xf32>
// CHECK: scf.yield %[[NA]], %[[NB]] : f32, f32
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}

func.func @recurrence(%a: tensor<4x64xf32>, %x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %A, %h = tang.scan (%r) along (%t) [4, 64] monoid(@affine_map) : tensor<4x64xf32>, tensor<4x64xf32> {
    %at = tang.read %a[%r, %t] : tensor<4x64xf32>
    %xt = tang.read %x[%r, %t] : tensor<4x64xf32>
    tang.yield %at, %xt : f32, f32
  }
  return %h : tensor<4x64xf32>
}
