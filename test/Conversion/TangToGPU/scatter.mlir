// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// A scatter-add: the base is copied into the result's buffer by a point
// kernel, then the scatter kernel updates it in place. The column %d
// alone is a coordinate, so a thread takes each column (16 threads); the
// rows (%i), which may collide, are a loop in each thread, in order. An
// out-of-range row is dropped (an unsigned comparison guards the write);
// the element is loaded, added to and stored: no atomics.
// CHECK-LABEL: func.func @scatter_add
// CHECK: gpu.launch_func @tang_kernels::@scatter_add_k0 {{.*}} args(%arg2 : memref<6x16xf32>, %arg3 : memref<6x16xf32>)
// CHECK: gpu.launch_func @tang_kernels::@scatter_add_k1 {{.*}} threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%arg0 : memref<24xi32>, %arg1 : memref<24x16xf32>, %arg3 : memref<6x16xf32>)
// CHECK-LABEL: gpu.func @scatter_add_k1
// CHECK-SAME: known_block_size = array<i32: 16, 1, 1>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%[[I]]] : memref<24xi32>
// CHECK: %[[OK:.*]] = arith.cmpi ult
// CHECK: scf.if %[[OK]]
// CHECK: %[[OLD:.*]] = memref.load %{{.*}} : memref<6x16xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK: memref.store %[[NEW]], %{{.*}} : memref<6x16xf32>
func.func @scatter_add(%tok: tensor<24xi32>, %dY: tensor<24x16xf32>, %base: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %s = tang.scatter (%i, %d) [24, 16] into %base monoid(add) : tensor<6x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<24x16xf32>
    tang.put %g at [symbol(%row), %d] drop : f32
  }
  return %s : tensor<6x16xf32>
}

// -----

// An insert at a runtime position: %h and %e are both coordinates, so
// every point is a thread and nothing loops; the bf16 value is stored as
// it is.
// CHECK-LABEL: gpu.func @kv_insert_k1
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// CHECK-NOT: scf.for
// CHECK: scf.if
// CHECK: memref.store %{{.*}} : memref<4x32x16xbf16>
func.func @kv_insert(%K: tensor<4x32x16xbf16>, %k: tensor<4x16xbf16>, %pos: tensor<i32>) -> tensor<4x32x16xbf16> {
  %K1 = tang.scatter (%h, %e) [4, 16] into %K : tensor<4x32x16xbf16> {
    %p = tang.read %pos[] : tensor<i32>
    %row = arith.index_cast %p : i32 to index
    %v = tang.read %k[%h, %e] : tensor<4x16xbf16>
    tang.put %v at [%h, symbol(%row), %e] drop : bf16
  }
  return %K1 : tensor<4x32x16xbf16>
}

// -----

func.func @trap(%tok: tensor<24xi32>, %dY: tensor<24x16xf32>, %base: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %s = tang.scatter (%i, %d) [24, 16] into %base monoid(add) : tensor<6x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<24x16xf32>
    // A row computed from the id: no input's element, which the runtime
    // would check (test/Conversion/TangToGPU/index-checks.mlir).
    // expected-error @+1 {{'tang.put' op traps on an out-of-range coordinate that kernels cannot check (no device error channel): the runtime checks a data coordinate that is an element of an integer input, as read; give this one the drop policy, or run it with tang-run}}
    tang.put %g at [symbol(%row) + 1, %d] : f32
  }
  return %s : tensor<6x16xf32>
}
