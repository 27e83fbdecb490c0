// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// The kernels a schedule names are built as it says, whatever the
// conversion's own options (none here); a schedule a kernel cannot honour is
// an error, never replaced.

// RUN: tang-opt %S/flash.mlir --tang-schedule --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file > %t.auto 2>/dev/null
// RUN: tang-opt %S/flash.mlir --tang-schedule=tensor-cores=wgmma --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file > %t.named 2>/dev/null
// RUN: diff %t.auto %t.named
// RUN: tang-opt %S/score-kernel.mlir --tang-schedule --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file > %t.auto 2>/dev/null
// RUN: tang-opt %S/score-kernel.mlir --tang-schedule=tensor-cores=mma-sync --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file > %t.named 2>/dev/null
// RUN: diff %t.auto %t.named
// RUN: tang-opt %S/tf32.mlir --tang-schedule=tf32=true --convert-tang-to-gpu="tensor-cores=wgmma tf32=true" --split-input-file > %t.auto 2>/dev/null
// RUN: tang-opt %S/tf32.mlir --tang-schedule="tensor-cores=wgmma tf32=true" --convert-tang-to-gpu="tensor-cores=wgmma tf32=true" --split-input-file > %t.named 2>/dev/null
// RUN: diff %t.auto %t.named
// RUN: tang-opt %S/../../Transforms/tang-schedule-kernels.mlir --tang-schedule --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file > %t.auto 2>/dev/null
// RUN: tang-opt %S/../../Transforms/tang-schedule-kernels.mlir --tang-schedule=tensor-cores=wgmma --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file > %t.named 2>/dev/null
// RUN: diff %t.auto %t.named

// A contraction on mma.sync in 64 x 64 tiles of 2 x 2 warps, 32-deep steps,
// a ring of 2: a 2 x 2 grid of 128-thread blocks.
// CHECK-LABEL: func.func @contraction
// CHECK: gpu.launch_func @tang_kernels::@contraction_k0 blocks in (%c2{{.*}}, %c2{{.*}}, %c1{{.*}}) threads in (%c128{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK: gpu.func @contraction_k0
// CHECK: memref.view {{.*}} to memref<2x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.mma.sync
func.func @contraction(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 32], mapping = [block_y, block_x, serial], threads = [2, 64, 1], vector = 8, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

// Split k: 200 = 7 k steps of 32 in 3 runs (3, 3, 1) per 64 x 64 tile,
// the splits of each of the 3 batch points along grid z; the sums in an
// f32 workspace, then a second kernel (a thread per 4 outputs: 3 x 70 x
// 72 / 4 = 3780 threads) adds the 3 partial tiles in order, adds the bias
// and stores bf16.
// CHECK-LABEL: func.func @split_k
// CHECK: %[[WS:.*]] = memref.alloc() : memref<9x70x72xf32>
// CHECK: gpu.launch_func @tang_kernels::@split_k_k0 blocks in (%c2{{.*}}, %c2{{.*}}, %c9{{.*}}) threads in (%c128{{.*}}, %c1{{.*}}, %c1{{.*}}) {{.*}}, %[[WS]] : memref<9x70x72xf32>)
// CHECK: gpu.launch_func @tang_kernels::@split_k_k0_1 blocks in (%c15{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c256{{.*}}, %c1{{.*}}, %c1{{.*}}) {{.*}}, %[[WS]] : memref<9x70x72xf32>)
// CHECK: gpu.func @split_k_k0(
// CHECK: nvvm.mma.sync
// CHECK: vector.store {{.*}} : memref<9x70x72xf32>, vector<4xf32>
// CHECK: gpu.func @split_k_k0_1(
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c3{{.*}}
// CHECK: vector.load {{.*}} : memref<9x70x72xf32>, vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: arith.truncf {{.*}} : vector<4xf32> to vector<4xbf16>
func.func @split_k(%x: tensor<3x70x200xbf16>, %w: tensor<3x200x72xbf16>, %bias: tensor<72xbf16>) -> tensor<3x70x72xbf16> {
  %c = tang.comprehension (%g, %i, %j) [3, 70, 72] attributes {schedule = #tang.schedule<tile = [1, 64, 64], mapping = [block_z, block_y, block_x], threads = [1, 2, 64], vector = 8, stages = 3, memory = [shared, shared, shared], kernel = contraction, mma = mma_sync, split_k = 3>} : tensor<3x70x72xbf16> {
    %s = tang.comprehension reduce (%k) [200] monoid(add) attributes {schedule = #tang.schedule<tile = [32], vector = 1, stages = 1, memory = [global]>} : f32 {
      %a = tang.read %x[%g, %i, %k] : tensor<3x70x200xbf16>
      %b = tang.read %w[%g, %k, %j] : tensor<3x200x72xbf16>
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %p = arith.mulf %af, %bf : f32
      tang.yield %p : f32
    }
    %bb = tang.read %bias[%j] : tensor<72xbf16>
    %bf = arith.extf %bb : bf16 to f32
    %t = arith.addf %s, %bf : f32
    %r = arith.truncf %t : f32 to bf16
    tang.yield %r : bf16
  }
  return %c : tensor<3x70x72xbf16>
}

// -----

func.func @split_k_empty_run(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{split_k = 3 leaves a split of 2 k steps of 32 (1 a split) without a step}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 32], mapping = [block_y, block_x, serial], threads = [2, 64, 1], vector = 8, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync, split_k = 3>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

func.func @flash_on_a_product(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{has a schedule asking for a flash kernel, but it is not attention}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 64], threads = [4, 32, 1], stages = 2, memory = [shared, shared], kernel = flash, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

func.func @odd_tile(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{has a schedule asking for a contraction kernel, but the emitter does not take 48 x 64 x 32 tiles of 2 x 2 warps in a ring of 2}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [48, 64, 32], threads = [2, 64, 1], vector = 8, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

func.func @too_much_shared(%A: tensor<1024x1024xbf16>, %B: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {
  // expected-error @+1 {{tensor-core kernel: 393216 bytes of shared memory for its tiles, more than the 232448 a block may have on sm_90a}}
  %C = tang.comprehension (%i, %j) reduce (%k) [1024, 1024, 1024] monoid(add) attributes {schedule = #tang.schedule<tile = [128, 256, 64], threads = [8, 32, 1], vector = 8, stages = 8, memory = [shared, shared, shared, shared, shared, shared, shared, shared], kernel = contraction, mma = wgmma>} : tensor<1024x1024xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1024x1024xbf16>
    %b = tang.read %B[%k, %j] : tensor<1024x1024xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1024x1024xbf16>
}

// -----

func.func @persistent_without_ws(%A: tensor<1024x1024xbf16>, %B: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {
  // expected-error @+1 {{warp-specialised exactly when persistent}}
  %C = tang.comprehension (%i, %j) reduce (%k) [1024, 1024, 1024] monoid(add) attributes {schedule = #tang.schedule<tile = [128, 128, 64], threads = [8, 32, 1], vector = 8, stages = 4, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, persistent = true>} : tensor<1024x1024xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1024x1024xbf16>
    %b = tang.read %B[%k, %j] : tensor<1024x1024xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1024x1024xbf16>
}

// -----

func.func @nested_without_step(%X: tensor<128x64xbf16>, %W: tensor<128x64xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{its nested reduction has no schedule with the k step}}
  %Y = tang.comprehension (%i, %j) [128, 128] attributes {schedule = #tang.schedule<tile = [64, 64], threads = [2, 64], vector = 8, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync>} : tensor<128x128xbf16> {
    %s = tang.comprehension reduce (%k) [64] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<128x64xbf16>
      %w = tang.read %W[%j, %k] : tensor<128x64xbf16>
      %xf = arith.extf %x : bf16 to f32
      %wf = arith.extf %w : bf16 to f32
      %p = arith.mulf %xf, %wf : f32
      tang.yield %p : f32
    }
    %t = arith.truncf %s : f32 to bf16
    tang.yield %t : bf16
  }
  return %Y : tensor<128x128xbf16>
}

// -----

func.func @flash_tile(%Q: tensor<256x64xbf16>, %K: tensor<256x64xbf16>, %V: tensor<256x64xbf16>) -> tensor<256x64xbf16> {
  // expected-error @+1 {{has a schedule asking for a flash kernel, but the mma.sync kernel takes 64 query rows (4 warps) and 64 keys per block}}
  %O = tang.comprehension (%i, %d) reduce (%j) [256, 64, 256] monoid(online_softmax) attributes {schedule = #tang.schedule<tile = [128, 64, 64], threads = [8, 1, 32], stages = 2, memory = [shared, shared], kernel = flash, mma = mma_sync>} : tensor<256x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%i, %e] : tensor<256x64xbf16>
      %k = tang.read %K[%j, %e] : tensor<256x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %v = tang.read %V[%j, %d] : tensor<256x64xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %O : tensor<256x64xbf16>
}

// -----

// A persistent flash grid needs the producer warpgroup that bulk copies
// bring (its ring runs on across the block's tiles).
func.func @flash_persistent_without_producer(%Q: tensor<256x64xbf16>, %K: tensor<256x64xbf16>, %V: tensor<256x64xbf16>) -> tensor<256x64xbf16> {
  // expected-error @+1 {{has a schedule asking for a flash kernel, but bulk tensor copies come from a producer warpgroup (warp_specialize), and only then may the grid be persistent}}
  %O = tang.comprehension (%i, %d) reduce (%j) [256, 64, 256] monoid(online_softmax) attributes {schedule = #tang.schedule<tile = [128, 64, 128], threads = [8, 1, 32], stages = 2, memory = [shared, shared], kernel = flash, mma = wgmma, persistent = true>} : tensor<256x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%i, %e] : tensor<256x64xbf16>
      %k = tang.read %K[%j, %e] : tensor<256x64xbf16>
      %p = arith.mulf %q, %k : bf16
      tang.yield %p : bf16
    }
    %v = tang.read %V[%j, %d] : tensor<256x64xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %O : tensor<256x64xbf16>
}

// -----

func.func @subgroup_refused(%A: tensor<40x24xf32>, %B: tensor<24x48xf32>) -> tensor<40x48xf32> {
  // expected-error @+1 {{has a schedule asking for a subgroup_mma kernel, but}}
  %C = tang.comprehension (%i, %j) reduce (%k) [40, 48, 24] monoid(add) attributes {schedule = #tang.schedule<tile = [40, 48, 24], kernel = subgroup_mma>} : tensor<40x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<40x24xf32>
    %b = tang.read %B[%k, %j] : tensor<24x48xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<40x48xf32>
}

// -----

func.func @wrong_vector(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{its operands move 8 elements (16 bytes) at a time, not 4}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 32], threads = [2, 64, 1], vector = 4, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

func.func @score_on_a_product(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{has a schedule asking for a score kernel, but it is not a sum over keys of dot-product scores}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 64], threads = [4, 32, 1], stages = 2, memory = [shared, shared], kernel = score, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}
