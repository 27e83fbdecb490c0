// RUN: tang-opt %s --tang-schedule="tensor-cores=wgmma" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=WG
// RUN: tang-opt %s --tang-schedule="tensor-cores=mma-sync" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SYNC
// RUN: tang-opt %s --tang-schedule="tensor-cores=wgmma warp-specialize=false" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=NOWS
// RUN: tang-opt %s --tang-schedule --split-input-file | FileCheck %s --check-prefix=AUTO

// With tensor-core options --tang-schedule names every kernel and all its
// parameters; without, kernels stay `auto`.
// AUTO-NOT: kernel =

// A large bf16 product: 128 x 256 tiles, 64-deep steps, a ring of 4, two
// consumer warpgroups (8 warps along the rows), operands by bulk tensor
// copies, a producer warpgroup on a persistent grid. On mma.sync: the
// heuristic's tiles, 2 x 4 warps (its threads).
// WG-LABEL: func.func @gemm
// WG: tang.schedule<tile = [128, 256, 64], mapping = [block_y, block_x, serial], threads = [8, 32, 1], vector = 8, stages = 4, storage = bf16, accumulate = f32, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, warp_specialize = true, persistent = true, group_m = 8>
// NOWS-LABEL: func.func @gemm
// NOWS: threads = [8, 32, 1], vector = 8, stages = 4, {{.*}} kernel = contraction, mma = wgmma, tma = true, group_m = 8>
// SYNC-LABEL: func.func @gemm
// SYNC: tang.schedule<tile = [128, 256, 64], {{.*}} threads = [2, 128, 1], vector = 8, stages = 4, {{.*}} kernel = contraction, mma = mma_sync, group_m = 8>
func.func @gemm(%A: tensor<4096x4096xbf16>, %B: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [4096, 4096, 4096] monoid(add) : tensor<4096x4096xbf16> {
    %a = tang.read %A[%i, %k] : tensor<4096x4096xbf16>
    %b = tang.read %B[%k, %j] : tensor<4096x4096xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<4096x4096xbf16>
}

// -----

// A product with an epilogue (as fusion nests it): the k step goes on the
// nested reduction's own schedule (64 on wgmma, 32 on mma.sync).
// WG-LABEL: func.func @epilogue
// WG: kernel = contraction, mma = wgmma
// WG: tang.comprehension reduce (%{{.*}}) [1024] monoid(add) attributes {schedule = #tang.schedule<tile = [64], {{.*}}>}
// SYNC-LABEL: func.func @epilogue
// SYNC: kernel = contraction, mma = mma_sync
// SYNC: tang.comprehension reduce (%{{.*}}) [1024] monoid(add) attributes {schedule = #tang.schedule<tile = [32], {{.*}}>}
func.func @epilogue(%X: tensor<1024x1024xbf16>, %W: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {
  %Y = tang.comprehension (%i, %j) [1024, 1024] : tensor<1024x1024xbf16> {
    %s = tang.comprehension reduce (%k) [1024] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<1024x1024xbf16>
      %w = tang.read %W[%j, %k] : tensor<1024x1024xbf16>
      %xf = arith.extf %x : bf16 to f32
      %wf = arith.extf %w : bf16 to f32
      %p = arith.mulf %xf, %wf : f32
      tang.yield %p : f32
    }
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    %t = arith.truncf %r : f32 to bf16
    tang.yield %t : bf16
  }
  return %Y : tensor<1024x1024xbf16>
}

// -----

// Attention (online softmax over keys of scaled dot products): a flash
// kernel. wgmma: 128 query rows (8 warps), 128-key steps at head dim 128,
// keys and values by bulk copies from a producer warpgroup, a ring of 4
// where shared memory holds it; mma.sync: 64 rows (4 warps), 64 keys, 2
// slots.
// WG-LABEL: func.func @attention
// WG: tang.schedule<tile = [1, 128, 128, 128], {{.*}} threads = [1, 8, 1, 32], {{.*}} stages = {{[2-4]}}, {{.*}} kernel = flash, mma = wgmma, tma = true, warp_specialize = true>
// SYNC-LABEL: func.func @attention
// SYNC: tang.schedule<tile = [1, 64, 128, 64], {{.*}} threads = [1, 4, 1, 32], {{.*}} stages = 2, {{.*}} kernel = flash, mma = mma_sync>
func.func @attention(%Q: tensor<2x1024x128xbf16>, %K: tensor<2x1024x128xbf16>, %V: tensor<2x1024x128xbf16>) -> tensor<2x1024x128xbf16> {
  %O = tang.comprehension (%b, %i, %d) reduce (%j) [2, 1024, 128, 1024] monoid(online_softmax) : tensor<2x1024x128xbf16> {
    %s = tang.comprehension reduce (%e) [128] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x1024x128xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<2x1024x128xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %c = arith.constant 0.0883883461 : bf16
    %sc = arith.mulf %s, %c : bf16
    %v = tang.read %V[%b, %j, %d] : tensor<2x1024x128xbf16>
    tang.yield %sc, %v : bf16, bf16
  }
  return %O : tensor<2x1024x128xbf16>
}

// -----

// A row softmax's statistics: no tensor-core kernel; SIMT, the heuristic's
// row schedule kept.
// WG-LABEL: func.func @row_max
// WG: tang.schedule<tile = [1, 4096], mapping = [block_x, serial], threads = [1, 256], {{.*}} kernel = simt>
func.func @row_max(%X: tensor<64x4096xf32>) -> tensor<64xf32> {
  %m = tang.comprehension (%i) reduce (%j) [64, 4096] monoid(max) : tensor<64xf32> {
    %x = tang.read %X[%i, %j] : tensor<64x4096xf32>
    tang.yield %x : f32
  }
  return %m : tensor<64xf32>
}

// -----

// A 16-bit product whose left operand is read through a non-affine-box view
// stays off the tensor cores, and the remark says why (at schedule time).
// WG-LABEL: func.func @strided
// WG: kernel = simt
func.func @strided(%A: tensor<256x512xbf16>, %B: tensor<256x256xbf16>) -> tensor<128x256xbf16> {
  // expected-remark @+1 {{not on tensor cores: the left operand is not contiguous in the reduced index}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 256, 256] monoid(add) : tensor<128x256xbf16> {
    %a = tang.read %A[%k, 2 * %i] : tensor<256x512xbf16>
    %b = tang.read %B[%k, %j] : tensor<256x256xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x256xbf16>
}

// -----

// Few tiles and a long reduction (33 x 264 with 4104 = 65 k steps of 64):
// the reduction split among 17 blocks per tile (runs of 4 steps, the
// last one 1), 85 blocks on the device model's 132 multiprocessors
// instead of 5. On mma.sync (32 x 64 tiles: 10 of them): 13 splits of 5.
// WG-LABEL: func.func @few_tiles_long_k
// WG: tang.schedule<tile = [64, 64, 64], {{.*}} kernel = contraction, mma = wgmma, tma = true, group_m = 8, split_k = 17>
// SYNC-LABEL: func.func @few_tiles_long_k
// SYNC: tang.schedule<tile = [32, 64, 64], {{.*}} kernel = contraction, mma = mma_sync, group_m = 8, split_k = 13>
func.func @few_tiles_long_k(%A: tensor<33x4104xbf16>, %B: tensor<4104x264xbf16>) -> tensor<33x264xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [33, 264, 4104] monoid(add) : tensor<33x264xbf16> {
    %a = tang.read %A[%i, %k] : tensor<33x4104xbf16>
    %b = tang.read %B[%k, %j] : tensor<4104x264xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<33x264xbf16>
}
