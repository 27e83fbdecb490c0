// RUN: tang-opt %s --split-input-file --tang-attach-target=chip=sm_90a --convert-tang-to-gpu | FileCheck %s
// RUN: tang-opt %s --split-input-file --tang-attach-target=chip=portable --convert-tang-to-gpu="cooperative=0" | FileCheck %s --check-prefix=PORTABLE

// (I - L) X = Y at 3 points, 4 x 4 systems, 8 columns: a thread per (point,
// column) = 24 threads. At 4 rows the loops are unrolled and the column
// kept in registers: row 0 is Y's, row 1 adds one product, ... row 3
// three; on CUDA each row of L is read as one 16-byte vector (its entries
// from the diagonal on unused), on the portable target one word at a time.
// No loop, no barrier, no workgroup memory.
// CHECK-LABEL: gpu.func @solve_k0
// CHECK-NOT: workgroup(
// CHECK-NOT: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: %[[Y0:.*]] = memref.load %{{.*}} : memref<3x4x8xf32>
// CHECK: memref.store %[[Y0]], %{{.*}} : memref<3x4x8xf32>
// CHECK: memref.load %{{.*}} : memref<3x4x8xf32>
// CHECK: %[[L1:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<3x4x4xf32>, vector<4xf32>
// CHECK: %[[E:.*]] = vector.extract %[[L1]][0]
// CHECK: %[[P:.*]] = arith.mulf %[[E]], %[[Y0]] fastmath<contract>
// CHECK: arith.addf %{{.*}}, %[[P]] fastmath<contract>
// CHECK-NOT: vector.extract
// CHECK: memref.store
// CHECK-COUNT-2: vector.extract
// CHECK-NOT: vector.extract
// CHECK: memref.store
// CHECK-COUNT-3: vector.extract
// CHECK-NOT: vector.extract
// CHECK: memref.store
// CHECK-NOT: memref.store
// CHECK: gpu.return

// PORTABLE-LABEL: gpu.func @solve_k0
// PORTABLE-NOT: vector.load
// PORTABLE-NOT: scf.for
// PORTABLE-COUNT-4: memref.store
// PORTABLE: gpu.return
func.func @solve(%L: tensor<3x4x4xf32>, %Y: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  %X = tang.triangular_solve %L, %Y : tensor<3x4x4xf32>, tensor<3x4x8xf32>
  return %X : tensor<3x4x8xf32>
}

// -----

// 70 rows, more than a thread keeps in registers: a loop over rows and,
// inside, over the earlier rows s < r, reading the column's earlier rows
// back from the result.
// CHECK-LABEL: gpu.func @long_k0
// CHECK: scf.for %[[R:[^ ]*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[Y:.*]] = memref.load %{{.*}}[%[[R]], %{{.*}}] : memref<70x2xf32>
// CHECK: %[[S:.*]] = scf.for %[[Q:[^ ]*]] = %{{.*}} to %[[R]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[Y]]) -> (f32)
// CHECK: %[[A:.*]] = memref.load %{{.*}}[%[[R]], %[[Q]]] : memref<70x70xf32>
// CHECK: %[[X:.*]] = memref.load %[[OUT:.*]][%[[Q]], %{{.*}}] : memref<70x2xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[X]]
// CHECK: arith.addf %[[ACC]], %[[P]]
// CHECK: memref.store %[[S]], %[[OUT]][%[[R]], %{{.*}}] : memref<70x2xf32>
func.func @long(%L: tensor<70x70xf32>, %Y: tensor<70x2xf32>) -> tensor<70x2xf32> {
  %X = tang.triangular_solve %L, %Y : tensor<70x70xf32>, tensor<70x2xf32>
  return %X : tensor<70x2xf32>
}
