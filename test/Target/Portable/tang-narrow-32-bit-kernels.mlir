// RUN: tang-opt %s --tang-narrow-32-bit-kernels | FileCheck %s

// Inside kernels, a float of an index goes through i32, and a constant
// float compare becomes a constant (folded away here); host code is left
// alone.
// CHECK-LABEL: gpu.func @k
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: arith.sitofp %[[N]] : i32 to f32
// CHECK-NOT: arith.cmpf
// CHECK-LABEL: func.func @host
// CHECK: arith.index_cast %{{.*}} : index to i64
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%out: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %w = arith.index_cast %i : index to i64
      %f = arith.sitofp %w : i64 to f32
      %t = arith.cmpf true, %f, %f : f32
      %z = arith.constant 0.0 : f32
      %s = arith.select %t, %f, %z : f32
      memref.store %s, %out[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @host(%i: index) -> f32 {
    %w = arith.index_cast %i : index to i64
    %f = arith.sitofp %w : i64 to f32
    return %f : f32
  }
}
