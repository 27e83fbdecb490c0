// RUN: tang-opt %s --pass-pipeline="builtin.module(gpu.module(gpu.func(tang-flat-buffer-params)))" --split-input-file --verify-diagnostics | FileCheck %s

// Flat buffers (memref<?xT>) become static for bare pointers; static
// buffers and the sizes buffer stay; loads and stores follow the new type.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: (%[[A:.*]]: memref<1099511627776xf32>, %[[B:.*]]: memref<4xf32>, %[[S:.*]]: memref<1xi32>)
// CHECK: memref.load %[[A]][%{{.*}}] : memref<1099511627776xf32>
// CHECK: memref.store %{{.*}}, %[[A]][%{{.*}}] : memref<1099511627776xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>, %b: memref<4xf32>, %s: memref<1xi32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<?xf32>
      memref.store %v, %a[%c0] : memref<?xf32>
      memref.store %v, %b[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{'memref.dim' op uses flat buffer parameter #0, which only memref.load and memref.store may use}}
      %n = memref.dim %a, %c0 : memref<?xf32>
      gpu.return
    }
  }
}
