// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu=tensor-cores=target --split-input-file --verify-diagnostics | FileCheck %s

// The kernel form reads the module's device model (#tang.target): its
// tensor cores (tensor-cores=target) and its shared memory per block.

// A device with 16 multiprocessors and 99 KiB of shared memory per block:
// mma.sync (not wgmma); the schedule's 128 x 256 tiles need a 132 KiB f32
// result tile, so the kernel takes its default 128 x 128 tiles (68 KiB,
// 4 warps), where the H200 takes 128 x 256 (192 KiB, 8 warps).
// CHECK-LABEL: func.func @small_shared
// CHECK: gpu.launch_func @tang_kernels::@small_shared_k0 {{.*}} threads in (%c128{{.*}}) dynamic_shared_memory_size %c69632_i32
// CHECK-LABEL: gpu.func @small_shared_k0
// CHECK: nvvm.mma.sync
// CHECK-NOT: nvvm.wgmma
module attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 16, shared_per_block = 101376, shared_per_sm = 102400, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = mma_sync, tma = false, clusters = false>} {
func.func @small_shared(%A: tensor<1024x512xbf16>, %B: tensor<512x1024xbf16>) -> tensor<1024x1024xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [1024, 1024, 512] monoid(add) : tensor<1024x1024xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1024x512xbf16>
    %w = tang.read %B[%k, %j] : tensor<512x1024xbf16>
    %p = arith.mulf %a, %w : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1024x1024xbf16>
}
}

// -----

// 40 KiB: not even the default tiles' result tile fits; a diagnostic, not
// a kernel that fails to launch.
module attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 16, shared_per_block = 40960, shared_per_sm = 40960, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = mma_sync, tma = false, clusters = false>} {
func.func @tiny_shared(%A: tensor<1024x512xbf16>, %B: tensor<512x1024xbf16>) -> tensor<1024x1024xbf16> {
  // expected-error @+1 {{tensor-core kernel: 69632 bytes of shared memory for its tiles, more than the 40960 a block may have on sm_80}}
  %C = tang.comprehension (%i, %j) reduce (%k) [1024, 1024, 512] monoid(add) : tensor<1024x1024xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1024x512xbf16>
    %w = tang.read %B[%k, %j] : tensor<512x1024xbf16>
    %p = arith.mulf %a, %w : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1024x1024xbf16>
}
}
