// Upstream mlir-opt (the LLVM toolchain's, linked against libMLIR.so) loads
// TangPlugin.so: the dialect parses and verifies, and tang's passes run.
// RUN: mlir-opt %s --load-dialect-plugin=%tang_obj/lib/TangPlugin.so \
// RUN:   --load-pass-plugin=%tang_obj/lib/TangPlugin.so \
// RUN:   --pass-pipeline='builtin.module(tang-fuse)' | FileCheck %s
// RUN: mlir-opt %s --load-dialect-plugin=%tang_obj/lib/TangPlugin.so \
// RUN:   --load-pass-plugin=%tang_obj/lib/TangPlugin.so \
// RUN:   --pass-pipeline='builtin.module(tang-lower-opencl)' \
// RUN:   | FileCheck %s --check-prefix=OPENCL

// The producer of %s fuses into its consumer: one comprehension is left.
// CHECK-LABEL: func.func @main
// CHECK: tang.comprehension
// CHECK-SAME: reduce
// CHECK-NOT: tang.comprehension
// CHECK: return

// A pipeline through the plugin: conversion, preparation, the OpenCL C
// printer.
// OPENCL: // OpenCL C 1.2, printed by tang
// OPENCL: __kernel void main_k0(__global float *restrict a0,
// OPENCL: exp(
func.func @main(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  %e = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %y = math.exp %x : f32
    tang.yield %y : f32
  }
  %s = tang.comprehension (%i) reduce (%k) [8, 32] monoid(add) : tensor<8xf32> {
    %x = tang.read %e[%i, %k] : tensor<8x32xf32>
    tang.yield %x : f32
  }
  return %s : tensor<8xf32>
}
