// RUN: not tang-opt %s -split-input-file --convert-tang-to-gpu 2>/dev/null | FileCheck %s
// RUN: tang-opt %s -split-input-file --convert-tang-to-gpu -verify-diagnostics -o /dev/null

// A tensor scan under the composition of affine maps, S -> A S + B on 2x3
// states, 4 parallel points and 5 steps: one thread per (point, column) =
// 12 threads; the steps, rows and the sum over k in order; the previous
// state is the init's at the first step, this thread's own column of the
// step before otherwise; the products of the transitions are not written.

// CHECK-LABEL: gpu.func @states_k0
// CHECK-SAME: known_block_size = array<i32: 12, 1, 1>
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: arith.cmpi eq, %[[T]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[B:.*]] = memref.load %{{.*}}[%{{.*}}, %[[T]], %[[I]], %{{.*}}] : memref<4x5x2x3xf32>
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%{{.*}} = %[[B]]) -> (f32)
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[T]], %[[I]], %[[K]]] : memref<4x5x2x2xf32>
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[K]], %{{.*}}] : memref<4x2x3xf32>
// CHECK: } else {
// CHECK: arith.subi %[[T]]
// CHECK: memref.load
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[T]], %[[I]], %{{.*}}] : memref<4x5x2x3xf32>
// CHECK-NOT: memref.store
// CHECK: gpu.return
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
func.func @products(%A: tensor<5x2x2xf32>, %B: tensor<5x2x3xf32>) -> tensor<5x2x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op uses the products of its transitions, which no kernel computes (a kernel carries the states only)}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<5x2x2xf32>, tensor<5x2x3xf32>) -> tensor<5x2x2xf32>, tensor<5x2x3xf32>
  return %PA : tensor<5x2x2xf32>
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
func.func @not_affine(%X: tensor<5x2x2xf32>) -> tensor<5x2x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op has a monoid no kernel runs: the kernel form runs tensor scans under the composition of affine maps (S -> A S + B, the combine (A2 A1, A2 B1 + B2))}}
  %P = tang.tensor_scan @matmul(%X : tensor<5x2x2xf32>) -> tensor<5x2x2xf32>
  return %P : tensor<5x2x2xf32>
}
