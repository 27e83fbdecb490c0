// RUN: tang-opt %s --tang-lower-opencl -o /dev/null | FileCheck %s
// RUN: rm -rf %t && tang-opt %s --tang-lower-opencl="bundle=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json

// The kernel form printed as OpenCL C 1.2: one __kernel per kernel-form
// kernel, buffers as __global pointers indexed row-major, the thread's point
// from get_group_id/get_local_id, the reduction as a loop whose carried
// value is a variable assigned at the end of each iteration.
// CHECK: // OpenCL C 1.2, printed by tang from the kernel form
// CHECK: __kernel void main_k0(__global float *restrict a0, __global float *restrict a1, __global float *restrict a2) {
// CHECK: long [[B:v[0-9]+]] = (long)get_group_id(0);
// CHECK: long [[T:v[0-9]+]] = (long)get_local_id(0);
// CHECK: if ([[IN:v[0-9]+]]) {
// CHECK: float [[ACC:v[0-9]+]] = {{v[0-9]+}};
// CHECK: for (long [[K:v[0-9]+]] = {{v[0-9]+}}; [[K]] < {{v[0-9]+}}; [[K]] += {{v[0-9]+}}) {
// CHECK: float [[X:v[0-9]+]] = a0[({{v[0-9]+}}) * 32 + [[K]]];
// CHECK: float [[W:v[0-9]+]] = a1[([[K]]) * 24 + {{v[0-9]+}}];
// CHECK: [[ACC]] = t{{[0-9]+}};
// CHECK: a2[({{v[0-9]+}}) * 24 + {{v[0-9]+}}] = [[ACC]];
// MANIFEST: "format": "opencl"
// MANIFEST: "image": "tang_kernels.cl"
func.func @main(%X: tensor<16x32xf32>, %W: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %Y = tang.comprehension (%i, %j) reduce (%k) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
    %x = tang.read %X[%i, %k] : tensor<16x32xf32>
    %w = tang.read %W[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %x, %w : f32
    tang.yield %p : f32
  }
  return %Y : tensor<16x24xf32>
}
