// RUN: tang-opt %s --tang-lower-c -o /dev/null | FileCheck %s
// RUN: rm -rf %t && tang-opt %s --tang-lower-c="bundle=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/manifest.json

// The kernel form printed as C11: the OpenCL C printer's bodies with a
// prelude for the built-ins they use, each kernel a function of the
// work-item ids, and a launcher running every work item of a launch
// (in parallel under OpenMP).
// CHECK: // C11, printed by tang from the kernel form
// CHECK: #include <tgmath.h>
// CHECK: #define get_group_id(d) (tang_ids[(d)])
// CHECK: static void main_k0(const long *tang_ids, float *restrict a0, float *restrict a1, float *restrict a2) {
// CHECK: long {{v[0-9]+}} = (long)get_group_id(0);
// CHECK: for (long [[K:v[0-9]+]] = {{v[0-9]+}}; [[K]] < {{v[0-9]+}}; [[K]] += {{v[0-9]+}}) {
// CHECK: void tang_launch_main_k0(const long *grid, const long *block, void **args) {
// CHECK: #pragma omp parallel for
// CHECK: main_k0(ids, (float *)args[0], (float *)args[1], (float *)args[2]);
// MANIFEST: "format": "c"
// MANIFEST: "image": "tang_kernels.c"
func.func @main(%X: tensor<16x32xf32>, %W: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %Y = tang.comprehension (%i, %j) reduce (%k) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
    %x = tang.read %X[%i, %k] : tensor<16x32xf32>
    %w = tang.read %W[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %x, %w : f32
    tang.yield %p : f32
  }
  return %Y : tensor<16x24xf32>
}
