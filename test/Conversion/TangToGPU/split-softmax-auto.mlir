// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target" --split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target split-softmax-mma=off" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target split-softmax-mma=on" --split-input-file | FileCheck %s --check-prefix=ON
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target split-softmax-blocks-per-sm=4" --split-input-file | FileCheck %s --check-prefix=PERSM
// RUN: not tang-opt %s --convert-tang-to-gpu="split-softmax-mma=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD
// split-softmax-mma's default, auto: decode attention takes its products on
// mma.sync wherever the shape allows (as on; off takes the lane kernel).
// The key splits (getSoftmaxSplits) fill two mma.sync blocks per
// multiprocessor (264 on the H200's 132), rounded down (every block
// resident at once), or eight lane blocks, rounded up; at most 64 splits. The Qwen3-8B shapes (32 query heads over 8 key/value heads, head
// dimension 128, bf16 caches) per sequence.
// BAD: split-softmax-mma{{.*}}sometimes

// A batch of one sequence: 8 row groups, on tensor cores, 264 / 8 = 33
// splits; with off, the lane kernel, 1056 / 8 = 132 -> 64.
// AUTO-LABEL: func.func @one_sequence
// AUTO: memref.alloc() : memref<32x33x128x3xf32>
// AUTO: gpu.launch_func @tang_kernels::@one_sequence_k0 blocks in (%c33, %c8, %c1
// AUTO: gpu.func @one_sequence_k0
// AUTO: nvvm.mma.sync
// OFF-LABEL: func.func @one_sequence
// OFF: memref.alloc() : memref<32x64x128x3xf32>
// OFF: gpu.func @one_sequence_k0
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.func @one_sequence_k0_1
// ON-LABEL: func.func @one_sequence
// ON: memref.alloc() : memref<32x33x128x3xf32>
func.func @one_sequence(%q: tensor<32x128xf32>, %K: tensor<8x4096x128xbf16>, %V: tensor<8x4096x128xbf16>, %pos: index) -> tensor<32x128xf32> {
  %cst = arith.constant 0.0883883461 : f32
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [32, 128, %n] monoid(online_softmax) : tensor<32x128xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<32x128xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<8x4096x128xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %cst : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<8x4096x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %s, %vf : f32, f32
  }
  return %o : tensor<32x128xf32>
}

// -----

// Nine row groups: 264 / 9 -> 29 splits; the lane kernel takes
// 1056 / 9 -> 64.
// AUTO-LABEL: func.func @nine_groups
// AUTO: memref.alloc() : memref<36x29x128x3xf32>
// AUTO: gpu.func @nine_groups_k0
// AUTO: nvvm.mma.sync
// OFF-LABEL: func.func @nine_groups
// OFF: memref.alloc() : memref<36x64x128x3xf32>
// OFF: gpu.func @nine_groups_k0
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.func @nine_groups_k0_1
func.func @nine_groups(%q: tensor<36x128xf32>, %K: tensor<9x4096x128xbf16>, %V: tensor<9x4096x128xbf16>, %pos: index) -> tensor<36x128xf32> {
  %cst = arith.constant 0.0883883461 : f32
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [36, 128, %n] monoid(online_softmax) : tensor<36x128xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<36x128xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<9x4096x128xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %cst : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<9x4096x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %s, %vf : f32, f32
  }
  return %o : tensor<36x128xf32>
}

// -----

// A batch of four: 32 row groups, 264 / 32 -> 8 splits on tensor cores
// (auto and on alike); the lane kernel 1056 / 32 = 33.
// AUTO-LABEL: func.func @four_sequences
// AUTO: memref.alloc() : memref<128x8x128x3xf32>
// AUTO: gpu.launch_func @tang_kernels::@four_sequences_k0 blocks in (%c8, %c32, %c1
// AUTO: gpu.func @four_sequences_k0
// AUTO: nvvm.mma.sync
// OFF-LABEL: func.func @four_sequences
// OFF: memref.alloc() : memref<128x33x128x3xf32>
// OFF: gpu.func @four_sequences_k0
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.func @four_sequences_k0_1
// With split-softmax-blocks-per-sm=4: 528 / 32 = 16 splits.
// PERSM-LABEL: func.func @four_sequences
// PERSM: memref.alloc() : memref<128x16x128x3xf32>
// ON-LABEL: func.func @four_sequences
// ON: memref.alloc() : memref<128x8x128x3xf32>
// ON: gpu.launch_func @tang_kernels::@four_sequences_k0 blocks in (%c8, %c32, %c1
// ON: gpu.func @four_sequences_k0
// ON: nvvm.mma.sync
func.func @four_sequences(%q: tensor<128x128xf32>, %K: tensor<32x4096x128xbf16>, %V: tensor<32x4096x128xbf16>, %pos: index) -> tensor<128x128xf32> {
  %cst = arith.constant 0.0883883461 : f32
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [128, 128, %n] monoid(online_softmax) : tensor<128x128xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<128x128xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<32x4096x128xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %cst : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<32x4096x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %s, %vf : f32, f32
  }
  return %o : tensor<128x128xf32>
}
