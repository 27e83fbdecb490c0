// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file | FileCheck %s

// A returned row-major reshape of a comprehension's result launches no
// copy kernel: the reduction writes the result's buffer through a view of
// its own shape.
// CHECK-LABEL: func.func @reshaped
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg1 {{\[}}[0, 1]] : memref<4x128xf32> into memref<512xf32>
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[FLAT]] {{\[}}[0, 1, 2]] output_shape [4, 8, 16] : memref<512xf32> into memref<4x8x16xf32>
// CHECK: gpu.launch_func @tang_kernels::@reshaped_k0 {{.*}} args(%arg0 : memref<4x8x16x32xf32>, %[[VIEW]] : memref<4x8x16xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @reshaped(%a: tensor<4x8x16x32xf32>) -> tensor<4x128xf32> {
  %s = tang.comprehension (%i, %j, %k) reduce (%r) [4, 8, 16, 32] monoid(add) : tensor<4x8x16xf32> {
    %x = tang.read %a[%i, %j, %k, %r] : tensor<4x8x16x32xf32>
    %y = arith.mulf %x, %x : f32
    tang.yield %y : f32
  }
  %o = tang.comprehension (%i, %j) [4, 128] : tensor<4x128xf32> {
    %x = tang.read %s[%i, %j floordiv 16, %j mod 16] : tensor<4x8x16xf32>
    tang.yield %x : f32
  }
  return %o : tensor<4x128xf32>
}

// -----

// A reshape that transposes (its linear index is not the source's) is
// copied by a kernel.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: memref.expand_shape
// CHECK: gpu.launch_func @tang_kernels::@transposed_k0
// CHECK: gpu.launch_func @tang_kernels::@transposed_k1
func.func @transposed(%a: tensor<4x8x16x32xf32>) -> tensor<4x128xf32> {
  %s = tang.comprehension (%i, %j, %k) reduce (%r) [4, 8, 16, 32] monoid(add) : tensor<4x8x16xf32> {
    %x = tang.read %a[%i, %j, %k, %r] : tensor<4x8x16x32xf32>
    tang.yield %x : f32
  }
  %o = tang.comprehension (%i, %j) [4, 128] : tensor<4x128xf32> {
    %x = tang.read %s[%i, %j mod 8, %j floordiv 8] : tensor<4x8x16xf32>
    tang.yield %x : f32
  }
  return %o : tensor<4x128xf32>
}

// -----

// A source read by something else too keeps its own buffer; the reshape
// is copied.
// CHECK-LABEL: func.func @shared_source
// CHECK-NOT: memref.expand_shape
// CHECK-COUNT-3: gpu.launch_func
func.func @shared_source(%a: tensor<4x8x16x32xf32>) -> (tensor<4x128xf32>, tensor<4x8xf32>) {
  %s = tang.comprehension (%i, %j, %k) reduce (%r) [4, 8, 16, 32] monoid(add) : tensor<4x8x16xf32> {
    %x = tang.read %a[%i, %j, %k, %r] : tensor<4x8x16x32xf32>
    tang.yield %x : f32
  }
  %o = tang.comprehension (%i, %j) [4, 128] : tensor<4x128xf32> {
    %x = tang.read %s[%i, %j floordiv 16, %j mod 16] : tensor<4x8x16xf32>
    tang.yield %x : f32
  }
  %m = tang.comprehension (%i, %j) reduce (%k) [4, 8, 16] monoid(max) : tensor<4x8xf32> {
    %x = tang.read %s[%i, %j, %k] : tensor<4x8x16xf32>
    tang.yield %x : f32
  }
  return %o, %m : tensor<4x128xf32>, tensor<4x8xf32>
}
