// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target" | FileCheck %s

// Which query heads a decode-attention block takes together
// (SplitSoftmaxMatch::group): the largest g <= 8 dividing the head extent
// for which every read of a key is the same for heads g k .. g k + g - 1.

// 8 heads per key/value head: 16 heads in 2 blocks a split, each key's
// reads loaded once for 8 rows.
// CHECK-LABEL: func.func @g8
// CHECK: gpu.launch_func @tang_kernels::@g8_k0 blocks in (%c64, %c2, %c1)
// A key read indexed by h mod 2 differs between neighbouring heads: a
// block per head.
// CHECK-LABEL: func.func @mod
// CHECK: gpu.launch_func @tang_kernels::@mod_k0 blocks in (%c64, %c16, %c1)
// Groups of 3 (not a power of two): 12 heads in 4 blocks.
// CHECK-LABEL: func.func @g3
// CHECK: gpu.launch_func @tang_kernels::@g3_k0 blocks in (%c64, %c4, %c1)
// CHECK: gpu.func @g8_k0({{.*}}workgroup(%{{.*}} : memref<4x8x16x3xf32
// CHECK: gpu.func @mod_k0({{.*}}workgroup(%{{.*}} : memref<4x1x16x3xf32
// CHECK: gpu.func @g3_k0({{.*}}workgroup(%{{.*}} : memref<4x3x16x3xf32

func.func @g8(%q: tensor<16xf32>, %K: tensor<2x64xf32>, %V: tensor<2x64x16xf32>, %pos: index) -> tensor<16x16xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [16, 16, %len] monoid(online_softmax) : tensor<16x16xf32> {
    %a = tang.read %q[%h] : tensor<16xf32>
    %k = tang.read %K[%h floordiv 8, %j] : tensor<2x64xf32>
    %v = tang.read %V[%h floordiv 8, %j, %d] : tensor<2x64x16xf32>
    %s = arith.mulf %a, %k : f32
    tang.yield %s, %v : f32, f32
  }
  return %o : tensor<16x16xf32>
}
func.func @mod(%q: tensor<16xf32>, %K: tensor<2x64xf32>, %V: tensor<2x64x16xf32>, %pos: index) -> tensor<16x16xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [16, 16, %len] monoid(online_softmax) : tensor<16x16xf32> {
    %a = tang.read %q[%h] : tensor<16xf32>
    %k = tang.read %K[%h mod 2, %j] : tensor<2x64xf32>
    %v = tang.read %V[%h floordiv 8, %j, %d] : tensor<2x64x16xf32>
    %s = arith.mulf %a, %k : f32
    tang.yield %s, %v : f32, f32
  }
  return %o : tensor<16x16xf32>
}
func.func @g3(%q: tensor<12xf32>, %K: tensor<4x64xf32>, %V: tensor<4x64x16xf32>, %pos: index) -> tensor<12x16xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [12, 16, %len] monoid(online_softmax) : tensor<12x16xf32> {
    %a = tang.read %q[%h] : tensor<12xf32>
    %k = tang.read %K[%h floordiv 3, %j] : tensor<4x64xf32>
    %v = tang.read %V[%h floordiv 3, %j, %d] : tensor<4x64x16xf32>
    %s = arith.mulf %a, %k : f32
    tang.yield %s, %v : f32, f32
  }
  return %o : tensor<12x16xf32>
}
