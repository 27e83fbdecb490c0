// The pipelines' matrix-unit options on one product (32x48, k = 64).
// RUN: tang-opt %s --tang-lower-metal -o /dev/null | FileCheck %s --check-prefix=METAL
// RUN: tang-opt %s --tang-lower-metal="matrix-units=0" -o /dev/null | FileCheck %s --check-prefix=METAL-OFF
// RUN: tang-opt %s --tang-lower-c="matrix-units=16" -o /dev/null | FileCheck %s --check-prefix=C
// RUN: tang-opt %s --tang-lower-spirv="matrix-units=1" | FileCheck %s --check-prefix=SPIRV
// RUN: tang-opt %s --tang-lower-spirv | FileCheck %s --check-prefix=SPIRV-OFF

// Metal (on by default): 8x8 simdgroup matrices, the [k, n] operand loaded
// with its row stride.
// METAL: simdgroup_float8x8 [[ACC:v[0-9]+]] = make_filled_simdgroup_matrix<float, 8, 8>(
// METAL: simdgroup_load([[B:v[0-9]+]], a1 + ({{v[0-9]+}}) * 48 + {{v[0-9]+}}, 48, ulong2(0, 0), false);
// METAL: simdgroup_multiply_accumulate(
// METAL: simdgroup_store({{v[0-9]+}}, a2 + ({{v[0-9]+}}) * 48 + {{v[0-9]+}}, 48, ulong2(0, 0), false);
// METAL-OFF-NOT: simdgroup
// C (an emulation, to check the same kernel form on the CPU):
// C: typedef struct { float e[16][16]; } tang_mma16;
// C: tang_mma16 {{v[0-9]+}} = tang_mma16_mad(
// C: tang_mma16_store(
// SPIR-V: SPIR-V 1.6 with the cooperative-matrix capability and operations.
// SPIRV: spirv.module @__spv__tang_kernels Logical GLSL450 requires #spirv.vce<v1.6, [{{.*}}CooperativeMatrixKHR
// SPIRV: spirv.KHR.CooperativeMatrixLoad {{.*}} <RowMajor>
// SPIRV: spirv.KHR.CooperativeMatrixMulAdd
// SPIRV: spirv.KHR.CooperativeMatrixStore
// SPIRV-OFF-NOT: CooperativeMatrix
func.func @main(%A: tensor<32x64xf32>, %B: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [32, 48, 64] monoid(add) : tensor<32x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<32x64xf32>
    %b = tang.read %B[%k, %j] : tensor<64x48xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<32x48xf32>
}
