// RUN: tang-opt %s --tang-attach-spirv-entry-points --split-input-file --verify-diagnostics | FileCheck %s

// The kernel form's block size becomes the SPIR-V entry point's.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 2, 1]>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel attributes {known_block_size = array<i32: 64, 2, 1>} {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{has no known_block_size for its SPIR-V entry point}}
    gpu.func @unsized() kernel {
      gpu.return
    }
  }
}

// -----

// A workgroup attribution (a row kernel's buffer) becomes a Workgroup
// allocation at the kernel's start, its uses that allocation's: upstream's
// convert-gpu-to-spirv takes no attributions.
// CHECK-LABEL: gpu.func @row
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>) kernel
// CHECK-NEXT: %[[BUF:.*]] = memref.alloc() : memref<8x4xf32, #spirv.storage_class<Workgroup>>
// CHECK: memref.store %{{.*}}, %[[BUF]][%{{.*}}, %{{.*}}] : memref<8x4xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.barrier
// CHECK: memref.load %[[BUF]]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @row(%a: memref<4xf32>) workgroup(%buf: memref<8x4xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %v = memref.load %a[%c0] : memref<4xf32>
      memref.store %v, %buf[%t, %c0] : memref<8x4xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %buf[%c0, %c0] : memref<8x4xf32, #gpu.address_space<workgroup>>
      memref.store %w, %a[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// A loop with results whose trip count may be zero (a thread past a row's
// end) runs inside a guard that else yields its initial values: upstream's
// SCF-to-SPIR-V conversion would leave them undefined. A loop of a constant
// trip count of at least one stays as it is.
// CHECK-LABEL: gpu.func @runs
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %[[LB:.*]], %[[UB:.*]] : index
// CHECK: %[[R:.*]] = scf.if %[[RUNS]] -> (f32) {
// CHECK:   %[[F:.*]] = scf.for %{{.*}} = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %[[INIT:.*]]) -> (f32)
// CHECK:   scf.yield %[[F]] : f32
// CHECK: } else {
// CHECK:   scf.yield %[[INIT]] : f32
// CHECK: memref.store %[[R]]
// CHECK-NOT: scf.if
// CHECK: scf.for %{{.*}} = %c0 to %c4
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @runs(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %init = arith.constant 1.0 : f32
      %t = gpu.thread_id x
      %s = scf.for %i = %t to %c4 step %c1 iter_args(%acc = %init) -> (f32) {
        %v = memref.load %a[%i] : memref<4xf32>
        %n = arith.addf %acc, %v : f32
        scf.yield %n : f32
      }
      memref.store %s, %a[%c0] : memref<4xf32>
      %u = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (f32) {
        %v = memref.load %a[%i] : memref<4xf32>
        %n = arith.addf %acc, %v : f32
        scf.yield %n : f32
      }
      memref.store %u, %a[%c1] : memref<4xf32>
      gpu.return
    }
  }
}
