// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// A tensor constant is a host buffer holding its contents (tang.data),
// read by the kernels like an input; a returned constant is copied.
// CHECK-LABEL: func.func @weights
// CHECK: %[[W:.*]] = memref.alloc() {tang.data = dense<{{\[}}[5.000000e-01, -1.000000e+00], [2.000000e+00, 2.500000e-01]]> : tensor<2x2xf32>} : memref<2x2xf32>
// CHECK: gpu.launch_func @tang_kernels::@weights_k{{.*}} args(%{{.*}} : memref<2x2xf32>, %[[W]] : memref<2x2xf32>, %{{.*}} : memref<2x2xf32>)
// CHECK: memref.dealloc %[[W]]
func.func @weights(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %W = arith.constant dense<[[0.5, -1.0], [2.0, 0.25]]> : tensor<2x2xf32>
  %y = tang.comprehension (%i, %j) [2, 2] : tensor<2x2xf32> {
    %a = tang.read %x[%i, %j] : tensor<2x2xf32>
    %w = tang.read %W[%i, %j] : tensor<2x2xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %y, %W : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

func.func @bool_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'arith.constant' op is a constant the kernel form cannot hold (it takes dense tensors of f64, f32, f16, bf16, i32 or i8)}}
  %m = arith.constant dense<[true, false]> : tensor<2xi1>
  %y = tang.comprehension (%i) [2] : tensor<2xf32> {
    %a = tang.read %x[%i] : tensor<2xf32>
    %b = tang.read %m[%i] : tensor<2xi1>
    %z = arith.constant 0.0 : f32
    %s = arith.select %b, %a, %z : f32
    tang.yield %s : f32
  }
  return %y : tensor<2xf32>
}

// -----

// A returned view is copied through to its source (the kernel form reads
// no views).
// CHECK-LABEL: func.func @returned_view
// CHECK-SAME: (%[[X:.*]]: memref<4x6xf32>, %[[Y:.*]]: memref<4x6xf32>, %[[V:.*]]: memref<2x3xf32>)
// CHECK: gpu.launch_func @tang_kernels::@returned_view_k{{.*}} args(%[[X]] : memref<4x6xf32>, %[[V]] : memref<2x3xf32>)
// CHECK-LABEL: gpu.func @returned_view_k
// CHECK: memref.load
func.func @returned_view(%X: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<2x3xf32>) {
  %y = tang.comprehension (%i, %j) [4, 6] : tensor<4x6xf32> {
    %a = tang.read %X[%i, %j] : tensor<4x6xf32>
    %b = arith.addf %a, %a : f32
    tang.yield %b : f32
  }
  %v = tang.view %X by affine_map<(d0, d1) -> (d0 + 1, d1 * 2)> : tensor<4x6xf32> to tensor<2x3xf32>
  return %y, %v : tensor<4x6xf32>, tensor<2x3xf32>
}
