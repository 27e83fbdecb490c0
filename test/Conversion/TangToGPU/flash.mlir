// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,SYNC
// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,WG

// A causal attention as fusion and the online-softmax pass leave it: one
// online-softmax reduction. With tensor cores it becomes one flash kernel:
// query rows per block (64 on 4 warps for mma.sync, 128 on 2 warpgroups for
// wgmma), keys and values double-buffered through shared memory by
// cp.async, S = Q K^T and P V on tensor cores, the score code (scale,
// causal select) on the accumulators, the row max and sum across the 4
// lanes of a row by shuffles, the output divided by the sum at the end. The
// host allocates nothing: no L x L intermediate. The causal select bounds
// the key loop: tiles past the block's last row are skipped, and the last
// query tiles (the most keys) start first. Key tiles wholly at or before the
// block's first row run a first loop without the mask's compare and select;
// the rest (the diagonal) a second loop with them. (Head dim 64: keys and
// values by cp.async; @causal_128 below has them by bulk tensor copies.)
// CHECK-LABEL: func.func @causal_attention
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @tang_kernels::@causal_attention_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size
// CHECK: gpu.func @causal_attention_k0
// CHECK: arith.subi %{{.*}}, %block_id_x
// SYNC: memref.view {{.*}} to memref<1x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// SYNC: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// WG: memref.extract_aligned_pointer_as_index
// WG: memref.view {{.*}} to memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
// WG: memref.view {{.*}} to memref<2x1x64x64xbf16, #gpu.address_space<workgroup>>
// WG: memref.view {{.*}} to memref<2x1x64x64xbf16, #gpu.address_space<workgroup>>
// WG: memref.view {{.*}} to memref<2x1x64x64xbf16, #gpu.address_space<workgroup>>
// WG: nvvm.fence.proxy
// CHECK: arith.floordivsi
// CHECK: arith.maxsi
// CHECK: %[[UB:.*]] = arith.minsi
// CHECK: arith.floordivsi
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[FULL:.*]] = arith.minsi {{.*}}, %[[UB]]
// CHECK: scf.for {{.*}} to %[[FULL]] {{.*}} iter_args
// CHECK-NOT: arith.cmpi sle
// CHECK: scf.yield
// CHECK: scf.for {{.*}} = %[[FULL]] to %[[UB]] {{.*}} iter_args
// CHECK: nvgpu.device_async_copy
// SYNC: nvvm.mma.sync
// WG: nvvm.wgmma.fence.aligned
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, {{.*}}], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: arith.cmpi sle
// CHECK: arith.select
// CHECK: gpu.shuffle  xor
// CHECK: math.exp {{.*}} fastmath<afn>
// SYNC: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// SYNC: nvvm.mma.sync
// WG: vector.store {{.*}} : memref<2x1x64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// WG: nvvm.fence.proxy
// WG: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: scf.yield
// CHECK: gpu.shuffle  xor
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>
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

// Head dimension 8: not a flash shape; it says so and takes the plain
// kernel.
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
// a block's rows): plain kernel.
// CHECK-LABEL: func.func @v_uses_i
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: nvvm.wgmma.mma_async
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
// 128 keys); the computing warpgroups wait for the slot's full barrier and
// release it once their products are done: no block barrier per step.
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
