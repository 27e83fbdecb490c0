// RUN: tang-opt %s --tang-attach-target --tang-schedule="tensor-cores=target cache=%S/Inputs/schedule-cache.json" --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not tang-opt %s --split-input-file --tang-schedule="cache=%t.missing" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tang-opt %s --split-input-file --tang-schedule="cache=%S/Inputs/schedule-cache-bad.json" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tang-opt %s --split-input-file --tang-attach-target="chip=sm_80" --tang-schedule="tensor-cores=target cache=%S/Inputs/schedule-cache.json" 2>&1 | FileCheck %s --check-prefix=SM80

// Schedules replayed from a tuning cache (docs/Tuning.md). The cache
// (Inputs/schedule-cache.json) holds a measured schedule for this product's
// structure at 1000^3 on sm_90a (64 x 128 tiles, a ring of 4, bulk copies;
// the heuristic's: 64 x 64 tiles, to fill the device), one at
// 512^3 that the kernel cannot honour, and one for 2048^3 on sm_80.

// MISSING: error: tang-schedule: cannot read the schedule cache '{{.*}}.missing'
// BAD: error: tang-schedule: the schedule cache '{{.*}}schedule-cache-bad.json': entry 0 needs the strings `structure`, `chip`, `sizes` and `schedule`

// The exact key: the cached schedule, marked.
// CHECK-LABEL: func.func @gemm_1000
// CHECK: schedule = #tang.schedule<tile = [64, 128, 64], mapping = [block_y, block_x, serial], threads = [4, 32, 1], vector = 8, stages = 4, storage = bf16, accumulate = f32, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, group_m = 8>
// CHECK-SAME: tang.schedule_source = "cache"
func.func @gemm_1000(%A: tensor<1000x1000xbf16>, %B: tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [1000, 1000, 1000] monoid(add) : tensor<1000x1000xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1000x1000xbf16>
    %b = tang.read %B[%k, %j] : tensor<1000x1000xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1000x1000xbf16>
}

// -----

// The same structure at 1008 x 1000 x 1000 (its size class, every extent
// rounded up to a power of two, is 1000^3's): a tensor-core kernel's tiles
// do not depend on the extents, so the nearest entry of the class is taken.
// CHECK-LABEL: func.func @gemm_near
// CHECK: schedule = #tang.schedule<tile = [64, 128, 64], {{.*}} kernel = contraction, mma = wgmma, tma = true, group_m = 8>
// CHECK-SAME: tang.schedule_source = "cache"
func.func @gemm_near(%A: tensor<1008x1000xbf16>, %B: tensor<1000x1000xbf16>) -> tensor<1008x1000xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [1008, 1000, 1000] monoid(add) : tensor<1008x1000xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1008x1000xbf16>
    %b = tang.read %B[%k, %j] : tensor<1000x1000xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1008x1000xbf16>
}

// -----

// Another structure (a product of the transposed B): no entry, the
// heuristic's schedule, unmarked.
// CHECK-LABEL: func.func @gemm_nt
// CHECK: kernel = contraction
// CHECK-NOT: tang.schedule_source
// CHECK: return
func.func @gemm_nt(%A: tensor<1000x1000xbf16>, %B: tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [1000, 1000, 1000] monoid(add) : tensor<1000x1000xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1000x1000xbf16>
    %b = tang.read %B[%j, %k] : tensor<1000x1000xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1000x1000xbf16>
}

// -----

// An entry the kernel cannot honour (a 96-row tile): reported, and the
// heuristic's schedule kept.
// CHECK-LABEL: func.func @gemm_512
// CHECK: tile = [64, 64, 64]
// CHECK-NOT: tang.schedule_source
// CHECK: return
func.func @gemm_512(%A: tensor<512x512xbf16>, %B: tensor<512x512xbf16>) -> tensor<512x512xbf16> {
  // expected-warning @below {{the tuning cache's schedule for sizes 512x512x512;512x512,512x512 is not taken: 'tang.comprehension' op has a schedule asking for a contraction kernel, but the emitter does not take 96 x 128 x 64 tiles}}
  %C = tang.comprehension (%i, %j) reduce (%k) [512, 512, 512] monoid(add) : tensor<512x512xbf16> {
    %a = tang.read %A[%i, %k] : tensor<512x512xbf16>
    %b = tang.read %B[%k, %j] : tensor<512x512xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<512x512xbf16>
}

// -----

// Keyed by chip: the sm_80 entry for 2048^3 is not taken on sm_90a. On
// sm_80 it is found but refused: it names wgmma, which sm_80 does not have
// (the heuristic's mma.sync schedule instead).
// CHECK-LABEL: func.func @gemm_2048
// CHECK: tile = [128, 128, 64]
// CHECK-NOT: tang.schedule_source
// CHECK: return
// SM80: warning: the tuning cache's schedule for sizes 2048x2048x2048;2048x2048,2048x2048 is not taken: 'tang.comprehension' op has a schedule asking for a contraction kernel, but its mma is wgmma, which sm_80 does not have
// SM80-LABEL: func.func @gemm_2048
// SM80: mma = mma_sync
// SM80-NOT: tang.schedule_source
// SM80: return
func.func @gemm_2048(%A: tensor<2048x2048xbf16>, %B: tensor<2048x2048xbf16>) -> tensor<2048x2048xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [2048, 2048, 2048] monoid(add) : tensor<2048x2048xbf16> {
    %a = tang.read %A[%i, %k] : tensor<2048x2048xbf16>
    %b = tang.read %B[%k, %j] : tensor<2048x2048xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<2048x2048xbf16>
}
