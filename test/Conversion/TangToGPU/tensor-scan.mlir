// RUN: not tang-opt %s -split-input-file --convert-tang-to-gpu 2>/dev/null | FileCheck %s
// RUN: tang-opt %s -split-input-file --convert-tang-to-gpu -verify-diagnostics -o /dev/null
// RUN: not tang-opt %s -split-input-file --convert-tang-to-gpu=cooperative=false 2>/dev/null | FileCheck %s --check-prefix=COLUMN

// A tensor scan under the composition of affine maps, S -> A S + B on 2x3
// states, 4 parallel points and 5 steps: one workgroup per (point, block of
// 4 columns) keeps its 2x4 slice of the state in workgroup memory, from the
// init's; a thread per row, 4 columns each (the last one past the state's
// 3: its loads clamped, its store to the states skipped). Each step: the
// sum over k in order from B, a barrier, the slice and the step's states
// replaced, a barrier. The products of the transitions are not written.
// Loads run ahead: the next step's B before the sum; in each trip of the
// sum (here both k of K = 2), the next trip's transitions (the next
// step's first, on the last trip) before the multiply-adds.

// Without cooperating threads (the portable backends' kernel form): one
// thread per (point, column) = 12 threads carries its column, the previous
// state the init's at the first step, its own store of the step before
// otherwise.
// COLUMN-LABEL: gpu.func @states_k0
// COLUMN-NOT: workgroup(
// COLUMN-SAME: known_block_size = array<i32: 12, 1, 1>
// COLUMN-NOT: gpu.barrier
// COLUMN: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// COLUMN: arith.cmpi eq, %[[T]]
// COLUMN: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// COLUMN: scf.for %[[K:[^ ]*]] = {{.*}} -> (f32)
// COLUMN: scf.if
// COLUMN: memref.load %{{.*}}[%{{.*}}, %[[K]], %{{.*}}] : memref<4x2x3xf32>
// COLUMN: } else {
// COLUMN: arith.subi %[[T]]
// COLUMN-NOT: gpu.barrier
// COLUMN: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[T]], %[[I]], %{{.*}}] : memref<4x5x2x3xf32>
// COLUMN: gpu.return

// CHECK-LABEL: gpu.func @states_k0
// CHECK-SAME: workgroup(%[[W:.*]] : memref<2x4xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: known_block_size = array<i32: 2, 1, 1>
// CHECK: memref.load %{{.*}} : memref<4x2x3xf32>
// CHECK: memref.store %{{.*}}, %[[W]]
// CHECK: gpu.barrier
// CHECK: memref.load %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}] : memref<4x5x2x3xf32>
// CHECK: memref.load %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}] : memref<4x5x2x2xf32>
// CHECK: memref.load %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}] : memref<4x5x2x2xf32>
// CHECK: scf.for %[[T:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[B:[^ ]*]] = {{.*}}, %[[A0:[^ ]*]] = {{.*}}, %[[A1:[^ ]*]] = {{.*}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK: %[[NT:.*]] = arith.minui
// CHECK: %[[NB:.*]] = memref.load %{{.*}}[%{{.*}}, %[[NT]], %{{.*}}, %{{.*}}] : memref<4x5x2x3xf32>
// CHECK: scf.for %[[K:[^ ]*]] = {{.*}} iter_args(%[[ACC:[^ ]*]] = %[[B]], {{.*}}, %[[X0:[^ ]*]] = %[[A0]], %[[X1:[^ ]*]] = %[[A1]]) -> (f32, f32, f32, f32, f32, f32)
// CHECK: %[[WRAP:.*]] = arith.cmpi eq
// CHECK: %[[TT:.*]] = arith.select %[[WRAP]], %[[NT]], %[[T]]
// CHECK: %[[A:.*]] = memref.load %{{.*}}[%{{.*}}, %[[TT]], %{{.*}}, %{{.*}}] : memref<4x5x2x2xf32>
// CHECK: %[[S:.*]] = memref.load %[[W]][%{{.*}}, %{{.*}}]
// CHECK: %[[P:.*]] = arith.mulf %[[X0]], %[[S]]
// CHECK: arith.addf %[[ACC]], %[[P]]
// CHECK: scf.yield %{{.*}}, %[[A]], %{{.*}} : f32, f32, f32, f32, f32, f32
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[W]]
// CHECK: arith.andi
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[T]], %{{.*}}, %{{.*}}] : memref<4x5x2x3xf32>
// CHECK-NOT: memref<4x5x2x2xf32>
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield %[[NB]], {{.*}} : f32, f32, f32, f32, f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
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

// -----

// f32 states of 4 rows, 4 columns a thread: the sum over k takes 4 k a
// trip, each transition row's A[t, i, k..k+3] one 16-byte vector load and
// each of the 4 slice rows' columns one (the slice aligned to 16 bytes).
// No init: the slice starts at zero (this once crashed: the kernel's
// output argument was read through a range the workgroup attribution
// moved).
// CHECK-LABEL: gpu.func @quads_k0
// CHECK-SAME: workgroup(%[[W:.*]] : memref<4x8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: scf.for %[[T:[^ ]*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: arith.select
// CHECK: %[[K1:.*]] = arith.select
// CHECK: %[[K2:.*]] = arith.addi %[[K1]]
// CHECK: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[K2]]] {alignment = 16 : i64} : memref<2x3x4x4xf32>, vector<4xf32>
// CHECK: vector.load %[[W]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x8xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-3: vector.load %[[W]]
// CHECK: vector.extract
// CHECK: arith.mulf
// CHECK: gpu.barrier
tang.monoid @affine : [tensor<4x4xf32>, tensor<4x8xf32>] identity [] {
^bb0(%a1: tensor<4x4xf32>, %b1: tensor<4x8xf32>, %a2: tensor<4x4xf32>, %b2: tensor<4x8xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [4, 4, 4] monoid(add) : tensor<4x4xf32> {
    %x = tang.read %a2[%i, %k] : tensor<4x4xf32>
    %y = tang.read %a1[%k, %j] : tensor<4x4xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %b = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %s = tang.comprehension reduce (%k) [4] monoid(add) : f32 {
      %x = tang.read %a2[%i, %k] : tensor<4x4xf32>
      %y = tang.read %b1[%k, %j] : tensor<4x8xf32>
      %p = arith.mulf %y, %x : f32
      tang.yield %p : f32
    }
    %z = tang.read %b2[%i, %j] : tensor<4x8xf32>
    %r = arith.addf %z, %s : f32
    tang.yield %r : f32
  }
  tang.yield %a, %b : tensor<4x4xf32>, tensor<4x8xf32>
}
func.func @quads(%A: tensor<2x3x4x4xf32>, %B: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>
  return %S : tensor<2x3x4x8xf32>
}
