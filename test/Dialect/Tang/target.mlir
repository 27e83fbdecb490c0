// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s

// A device model written by hand (a device the table does not know): every
// field round-trips; the sizes and peaks left out are 0 (unknown) and not
// printed.
// CHECK: module attributes {tang.target = #tang.target<chip = "sm_89", device = "a laptop GPU", sm_count = 24, shared_per_block = 101376, shared_per_sm = 102400, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = mma_sync, tma = false, clusters = false, l2_bytes = 33554432>}
module attributes {tang.target = #tang.target<chip = "sm_89",
    device = "a laptop GPU", sm_count = 24, shared_per_block = 101376,
    shared_per_sm = 102400, registers_per_sm = 65536, warp_size = 32,
    max_threads = 1024, tensor_cores = mma_sync, tma = false,
    clusters = false, l2_bytes = 33554432>} {
}
