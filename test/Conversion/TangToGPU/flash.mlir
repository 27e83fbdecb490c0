// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,SYNC
// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,WG

// A causal attention as fusion and the online-softmax pass leave it: one
// online-softmax reduction. With tensor cores it becomes one flash kernel:
// S = Q K^T and P V on tensor cores, the score code (scale, causal select)
// on the accumulators, the row max and sum across the 4 lanes of a row by
// shuffles, exp(s - max) as ex2.approx.ftz of one fma (the positive scale
// folded into it: the select takes the dot product itself), the output
// divided by the sum at the end. The host allocates nothing: no L x L
// intermediate. The causal select bounds the key loop: tiles past the
// block's last row are skipped, and the last query tiles (the most keys)
// start first. Key tiles wholly at or before the block's first row run a
// loop without the mask's compare and select; the rest (the diagonal) a
// second loop with them.
//
// mma.sync: 64 query rows on 4 warps, keys and values double-buffered by
// cp.async, P's accumulators the A operand of P V.
//
// wgmma (FA3's structure): 128 query rows on 2 warpgroups, keys and values
// by bulk tensor copies from a producer warpgroup (128-key steps). Step 0's
// scores and softmax run before the loop; step t issues S(t) and then
// O += P(t-1) V(t-1) with P from registers (inline PTX: the register form
// of wgmma), waits for S(t) alone (wait 1), runs its softmax while the
// second product runs, then waits for it (wait 0), releases slot t-1 and
// rescales O; the last P V follows the loop. The two warpgroups take turns
// issuing products on named barriers (ping-pong): a sync before, an
// arrive after. The grid is persistent: the producer and the computing
// warpgroups each loop over the block's tiles (bid, bid + grid, ...,
// batch-major, a batch point's tiles with the most keys first), the ring's
// step running on across them;
// the computing threads reload Q once both warpgroups are done with the
// last tile's (named barrier 3), and release the last step's slot.
// CHECK-LABEL: func.func @causal_attention
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @tang_kernels::@causal_attention_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size
// CHECK: gpu.func @causal_attention_k0
// SYNC: arith.subi %{{.*}}, %block_id_x
// SYNC: memref.view {{.*}} to memref<1x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// WG: memref.extract_aligned_pointer_as_index
// WG: memref.view {{.*}} to memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
// WG: memref.view {{.*}} to memref<4x1x128x64xbf16, #gpu.address_space<workgroup>>
// WG: memref.view {{.*}} to memref<4x1x128x64xbf16, #gpu.address_space<workgroup>>
// WG-NOT: memref.view
// WG: nvvm.setmaxregister decrease 40
// WG: %[[BID:.*]] = gpu.block_id x
// WG: scf.for %[[T:.*]] = %[[BID]] to %c2 step %c2{{.*}} iter_args(%[[RING:.*]] = %c0{{.*}})
// WG: %[[TM:.*]] = arith.remui %[[T]], %c1
// WG: arith.subi %c0{{.*}}, %[[TM]]
// CHECK: arith.floordivsi
// CHECK: arith.maxsi
// CHECK: %[[UB:.*]] = arith.minsi
// CHECK: arith.floordivsi
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[FULL:.*]] = arith.minsi {{.*}}, %[[UB]]
// SYNC: scf.for {{.*}} to %[[FULL]] {{.*}} iter_args
// SYNC-NOT: arith.cmpi sle
// SYNC: scf.yield
// SYNC: scf.for {{.*}} = %[[FULL]] to %[[UB]] {{.*}} iter_args
// SYNC: nvgpu.device_async_copy
// SYNC: nvvm.mma.sync
// SYNC: arith.cmpi sle
// SYNC: arith.select
// SYNC: gpu.shuffle  xor
// SYNC: math.fma
// SYNC: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// SYNC: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// SYNC: nvvm.mma.sync
// SYNC: scf.yield
// WG: scf.for %[[KB:.*]] = %c0{{.*}} to %[[UB]]
// WG: arith.addi %[[RING]], %[[KB]]
// WG: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WG: %[[NEXT:.*]] = arith.addi %[[RING]], %[[UB]]
// WG: scf.yield %[[NEXT]]
// WG: } else {
// WG: scf.for %[[T2:.*]] = %{{.*}} to %c2 step %c2{{.*}} iter_args(%[[RING2:.*]] = %c0{{.*}})
// WG: arith.floordivsi
// WG: arith.maxsi
// WG: %[[UB2:.*]] = arith.minsi
// WG: arith.floordivsi
// WG: arith.maxsi
// WG: arith.minsi
// WG: %[[FULL2:.*]] = arith.minsi {{.*}}, %[[UB2]]
// WG: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WG: nvgpu.device_async_copy
// WG: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WG: nvvm.barrier.arrive id
// The prologue: step 0, masked.
// WG: scf.if
// WG: nvvm.mbarrier.try_wait.parity
// WG: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, {{.*}}], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG: nvvm.barrier.arrive id
// WG: nvvm.wgmma.wait.group.sync.aligned 0
// WG: arith.cmpi sle
// WG: math.fma
// WG: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// WG: scf.yield
// WG: } else {
// WG: %[[FROM1:.*]] = arith.maxsi %[[FULL2]], %c1
// WG: scf.for {{.*}} = %c1{{.*}} to %[[FROM1]] {{.*}} iter_args
// WG: nvvm.mbarrier.try_wait.parity
// WG: nvvm.barrier id
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// WG: nvvm.wgmma.commit.group.sync.aligned
// WG: nvvm.wgmma.fence.aligned
// WG-COUNT-8: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// WG: nvvm.wgmma.commit.group.sync.aligned
// WG: nvvm.barrier.arrive id
// WG: nvvm.wgmma.wait.group.sync.aligned 1
// WG-NOT: arith.cmpi sle
// WG: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// WG: nvvm.wgmma.wait.group.sync.aligned 0
// WG: nvvm.mbarrier.arrive
// WG: scf.yield
// WG: scf.for {{.*}} = %[[FROM1]] to %[[UB2]] {{.*}} iter_args
// WG: nvvm.wgmma.wait.group.sync.aligned 1
// WG: arith.cmpi sle
// WG: nvvm.wgmma.wait.group.sync.aligned 0
// WG: scf.yield
// The epilogue: the last step's P V, then warpgroup 0 takes warpgroup 1's
// last turn.
// WG: scf.if
// WG: nvvm.barrier id
// WG-COUNT-8: llvm.inline_asm has_side_effects
// WG: nvvm.barrier.arrive id
// WG: nvvm.wgmma.wait.group.sync.aligned 0
// WG: nvvm.mbarrier.arrive
// WG: scf.if
// WG: nvvm.barrier id
// CHECK: gpu.shuffle  xor
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>
// WG: %[[NEXT2:.*]] = arith.addi %[[RING2]], %[[UB2]]
// WG: scf.yield %[[NEXT2]]
func.func @causal_attention(%arg0: tensor<1x2x80x64xbf16>, %arg1: tensor<1x2x80x64xbf16>, %arg2: tensor<1x2x80x64xbf16>) -> tensor<1x2x80x64xbf16> {
  %cst = arith.constant 0xFF80 : bf16
  %cst_0 = arith.constant 1.250000e-01 : bf16
  %0 = tang.comprehension (%p0, %p1, %p2, %p3) reduce (%r0) [1, 2, 80, 64, 80] monoid(online_softmax) : tensor<1x2x80x64xbf16> {
    %1 = tang.comprehension reduce (%r0_1) [64] monoid(add) : bf16 {
      %8 = tang.read %arg0[%p0, %p1, %p2, %r0_1] : tensor<1x2x80x64xbf16>
      %9 = tang.read %arg1[%p0, %p1, %r0, %r0_1] : tensor<1x2x80x64xbf16>
      %10 = arith.mulf %8, %9 : bf16
      tang.yield %10 : bf16
    }
    %2 = arith.mulf %1, %cst_0 : bf16
    %3 = tang.index %p2 : i32
    %4 = tang.index %r0 : i32
    %5 = arith.cmpi sle, %4, %3 : i32
    %6 = arith.select %5, %2, %cst : bf16
    %7 = tang.read %arg2[%p0, %p1, %r0, %p3] : tensor<1x2x80x64xbf16>
    tang.yield %6, %7 : bf16, bf16
  }
  return %0 : tensor<1x2x80x64xbf16>
}

// -----

// Head dimension 8: not a flash shape; it says so and takes the split
// kernel on lanes (mma.sync takes head dimensions from 32).
// CHECK-LABEL: func.func @small_head
// CHECK-NOT: nvvm.mma.sync
func.func @small_head(%Q: tensor<1x2x16x8xbf16>, %K: tensor<1x2x16x8xbf16>, %V: tensor<1x2x16x8xbf16>) -> tensor<1x2x16x8xbf16> {
  // expected-remark @below {{not a flash-attention kernel: head dimensions must be 64, 128, 192 or 256}}
  %0 = tang.comprehension (%b, %h, %i, %d) reduce (%j) [1, 2, 16, 8, 16] monoid(online_softmax) : tensor<1x2x16x8xbf16> {
    %s = tang.comprehension reduce (%e) [8] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %h, %i, %e] : tensor<1x2x16x8xbf16>
      %k = tang.read %K[%b, %h, %j, %e] : tensor<1x2x16x8xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %v = tang.read %V[%b, %h, %j, %d] : tensor<1x2x16x8xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %0 : tensor<1x2x16x8xbf16>
}

// -----

// Heads as column offsets of [B, L, H * 64] tensors (h * 64 + e: contiguous
// in e) and the output in [B, L, H, 64] order, as a transformer block
// writes them: still one flash kernel.
// CHECK-LABEL: func.func @heads
// SYNC: nvvm.mma.sync
// WG: nvvm.wgmma.mma_async
// CHECK: vector.store {{.*}} : memref<1x40x2x64xbf16>, vector<2xbf16>
func.func @heads(%Q: tensor<1x40x128xbf16>, %K: tensor<1x40x128xbf16>, %V: tensor<1x40x128xbf16>) -> tensor<1x40x2x64xbf16> {
  %0 = tang.comprehension (%b, %i, %h, %d) reduce (%j) [1, 40, 2, 64, 40] monoid(online_softmax) : tensor<1x40x2x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %h * 64 + %e] : tensor<1x40x128xbf16>
      %k = tang.read %K[%b, %j, %h * 64 + %e] : tensor<1x40x128xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %v = tang.read %V[%b, %j, %h * 64 + %d] : tensor<1x40x128xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %0 : tensor<1x40x2x64xbf16>
}

// -----

// The value may not depend on the query index (keys and values are shared by
// a block's rows): no flash kernel. Its 128 rows would leave the device
// idle: split over the keys (flash-decoding), a row a block, 2 splits.
// CHECK-LABEL: func.func @v_uses_i
// CHECK: gpu.launch_func @tang_kernels::@v_uses_i_k0 blocks in (%c2, %c128, %c1)
// CHECK: gpu.launch_func @tang_kernels::@v_uses_i_k0_1
func.func @v_uses_i(%Q: tensor<1x128x64xbf16>, %K: tensor<1x128x64xbf16>, %V: tensor<1x128x128x64xbf16>) -> tensor<1x128x64xbf16> {
  // expected-remark @below {{not a flash-attention kernel: the value depends on the query index}}
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 128, 64, 128] monoid(online_softmax) : tensor<1x128x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x128x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x128x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %v = tang.read %V[%b, %i, %j, %d] : tensor<1x128x128x64xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %0 : tensor<1x128x64xbf16>
}

// -----

// An unsigned comparison with a negative offset (j <=u i - 1 wraps at i = 0,
// keeping every key for row 0): no key tiles are skipped.
// CHECK-LABEL: func.func @strict
// CHECK-NOT: arith.minsi
// CHECK: gpu.return
func.func @strict(%Q: tensor<1x128x64xbf16>, %K: tensor<1x128x64xbf16>, %V: tensor<1x128x64xbf16>) -> tensor<1x128x64xbf16> {
  %ninf = arith.constant 0xFF80 : bf16
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 128, 64, 128] monoid(online_softmax) : tensor<1x128x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x128x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x128x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %vi = tang.index [%i - 1] : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi ule, %vj, %vi : i32
    %t = arith.select %keep, %s, %ninf : bf16
    %v = tang.read %V[%b, %j, %d] : tensor<1x128x64xbf16>
    tang.yield %t, %v : bf16, bf16
  }
  return %0 : tensor<1x128x64xbf16>
}

// -----

// Score code reading a tensor (a bias) reads in bounds on the padding rows
// and keys of the last tiles (their scores are discarded).
// CHECK-LABEL: func.func @bias
// SYNC: nvvm.mma.sync
// WG: nvvm.wgmma.mma_async
// CHECK: %[[I:[0-9]+]] = arith.minui %{{[0-9]+}}, %c79
// CHECK-NEXT: arith.constant 79
// CHECK-NEXT: %[[J:[0-9]+]] = arith.minui %{{[0-9]+}}, %c79
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]]] : memref<80x80xbf16>
func.func @bias(%Q: tensor<1x80x64xbf16>, %K: tensor<1x80x64xbf16>, %V: tensor<1x80x64xbf16>, %Bias: tensor<80x80xbf16>) -> tensor<1x80x64xbf16> {
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 80, 64, 80] monoid(online_softmax) : tensor<1x80x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x80x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x80x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %bias = tang.read %Bias[%i, %j] : tensor<80x80xbf16>
    %t = arith.addf %s, %bias : bf16
    %v = tang.read %V[%b, %j, %d] : tensor<1x80x64xbf16>
    tang.yield %t, %v : bf16, bf16
  }
  return %0 : tensor<1x80x64xbf16>
}

// -----

// Head dim 128 with wgmma: keys and values come by bulk tensor copies from a
// producer warpgroup (384 threads; its first thread waits for a slot's empty
// barrier, expects the step's 64 KB, copies K and V in 64-column boxes of
// 128 keys) from the start; the computing warpgroups load Q (cp.async,
// waited for among themselves on a named barrier), wait for a slot's full
// barrier and release it once their products are done: no block barrier
// per step.
// WG-LABEL: func.func @causal_128
// WG: nvgpu.tma.create.descriptor {{.*}} box[%c1{{.*}}, %c1{{.*}}, %c128{{.*}}, %c64{{.*}}]
// WG: nvgpu.tma.create.descriptor {{.*}} box[%c1{{.*}}, %c1{{.*}}, %c128{{.*}}, %c64{{.*}}]
// WG: gpu.launch_func @tang_kernels::@causal_128_k0 blocks in ({{.*}}) threads in (%c384,
// WG: gpu.func @causal_128_k0
// WG-COUNT-4: nvvm.mbarrier.init
// WG: nvvm.setmaxregister decrease 40
// WG: scf.for
// WG: nvvm.mbarrier.try_wait.parity
// WG: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32
// WG-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WG: } else {
// WG: nvvm.setmaxregister increase 232
// WG: nvgpu.device_async_copy
// WG: nvgpu.device_async_wait
// WG: nvvm.barrier id = %{{.*}} number_of_threads = %c256
// WG: scf.for
// WG: nvvm.mbarrier.try_wait.parity
// WG: nvvm.wgmma.mma_async
// WG: nvvm.mbarrier.arrive
// WG-NOT: gpu.barrier
// WG: scf.yield
// WG: gpu.return
// SYNC-LABEL: func.func @causal_128
// SYNC-NOT: cp.async.bulk.tensor
// SYNC: gpu.return
func.func @causal_128(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %ninf = arith.constant 0xFF80 : bf16
  %scale = arith.constant 8.837890e-02 : bf16
  %o = tang.comprehension (%b, %h, %i, %d) reduce (%j) [1, 2, 256, 128, 256] monoid(online_softmax) : tensor<1x2x256x128xbf16> {
    %s = tang.comprehension reduce (%e) [128] monoid(add) : bf16 {
      %x = tang.read %q[%b, %h, %i, %e] : tensor<1x2x256x128xbf16>
      %y = tang.read %k[%b, %h, %j, %e] : tensor<1x2x256x128xbf16>
      %p = arith.mulf %x, %y : bf16
      tang.yield %p : bf16
    }
    %sc = arith.mulf %s, %scale : bf16
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %ok = arith.cmpi sle, %jj, %ii : i32
    %m = arith.select %ok, %sc, %ninf : bf16
    %w = tang.read %v[%b, %h, %j, %d] : tensor<1x2x256x128xbf16>
    tang.yield %m, %w : bf16, bf16
  }
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// The softmax's exponent takes the score's scale only when it is a positive
// constant (max c x = c max x): with 0.125 the fma's factor is 0.125 log2(e)
// and the running max is of the dot product; with -0.125 the scores are
// computed (the product by -0.125 on every element) and the factor is
// log2(e).
// WG-LABEL: func.func @positive_scale
// WG: gpu.func @positive_scale_k0
// WG: arith.constant 0.180336878 : f32
// WG: math.fma
// WG: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
func.func @positive_scale(%Q: tensor<1x128x64xbf16>, %K: tensor<1x128x64xbf16>, %V: tensor<1x128x64xbf16>) -> tensor<1x128x64xbf16> {
  %c = arith.constant 1.250000e-01 : bf16
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 128, 64, 128] monoid(online_softmax) : tensor<1x128x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x128x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x128x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %t = arith.mulf %s, %c : bf16
    %v = tang.read %V[%b, %j, %d] : tensor<1x128x64xbf16>
    tang.yield %t, %v : bf16, bf16
  }
  return %0 : tensor<1x128x64xbf16>
}

// -----

// WG-LABEL: func.func @negative_scale
// WG: gpu.func @negative_scale_k0
// WG-NOT: 0.180336878
// WG: arith.constant -1.250000e-01 : f32
// WG: arith.mulf
// WG: arith.constant 1.44269502 : f32
// WG: math.fma
// WG: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
func.func @negative_scale(%Q: tensor<1x128x64xbf16>, %K: tensor<1x128x64xbf16>, %V: tensor<1x128x64xbf16>) -> tensor<1x128x64xbf16> {
  %c = arith.constant -1.250000e-01 : bf16
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 128, 64, 128] monoid(online_softmax) : tensor<1x128x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x128x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x128x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %t = arith.mulf %c, %s : bf16
    %v = tang.read %V[%b, %j, %d] : tensor<1x128x64xbf16>
    tang.yield %t, %v : bf16, bf16
  }
  return %0 : tensor<1x128x64xbf16>
}

// -----

// f16: P V's register form takes f16 pairs (packed into 32-bit operands)
// and says so in the instruction.
// WG-LABEL: func.func @f16_attention
// WG: gpu.func @f16_attention_k0
// WG: vector.bitcast {{.*}} : vector<2xf16> to vector<1xi32>
// WG: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
func.func @f16_attention(%Q: tensor<1x128x64xf16>, %K: tensor<1x128x64xf16>, %V: tensor<1x128x64xf16>) -> tensor<1x128x64xf16> {
  %0 = tang.comprehension (%b, %i, %d) reduce (%j) [1, 128, 64, 128] monoid(online_softmax) : tensor<1x128x64xf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : f16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x128x64xf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x128x64xf16>
      %p = arith.mulf %q, %k : f16
      tang.yield %p : f16
    }
    %v = tang.read %V[%b, %j, %d] : tensor<1x128x64xf16>
    tang.yield %s, %v : f16, f16
  }
  return %0 : tensor<1x128x64xf16>
}
