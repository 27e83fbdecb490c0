// RUN: tang-opt %s --tang-attach-target="chip=sm_80" --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not tang-opt %s --tang-attach-target --split-input-file 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: not tang-opt %s --tang-attach-target="chip=sm_70" --split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tang-opt %s --tang-attach-target="chip=portable" --split-input-file 2>&1 | FileCheck %s --check-prefix=PORTABLE
// RUN: not tang-opt %s --tang-attach-target="chip=portable vector-bytes=8" --split-input-file 2>&1 | FileCheck %s --check-prefix=VEC8
// RUN: not tang-opt %s --tang-attach-target="chip=portable vector-bytes=3" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADVEC

// UNKNOWN: error: tang-attach-target: unknown chip 'sm_70' (known: sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, portable); for another device, write its #tang.target on the module

// A module without a target gets the chip's entry of the table.
// CHECK: module attributes {tang.target = #tang.target<chip = "sm_80", device = "NVIDIA A100-SXM4-80GB", sm_count = 108, shared_per_block = 166912, shared_per_sm = 167936, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = mma_sync, tma = false, clusters = false, l2_bytes = 41943040, dram_bytes_per_s = 2039000000000, tensor_ops_per_s = 312000000000000, fp32_ops_per_s = 19500000000000>}
// The portable backends' device model: no subgroup size assumed (warp 1),
// WebGPU's default limits, one element per access.
// PORTABLE: module attributes {tang.target = #tang.target<chip = "portable", device = "any Vulkan, WebGPU, OpenCL or Metal device", sm_count = 16, shared_per_block = 16384, shared_per_sm = 16384, registers_per_sm = 16384, warp_size = 1, max_threads = 256, tensor_cores = none, tma = false, clusters = false, vector_bytes = 1>}
// vector-bytes replaces the chip's widest access (--tang-lower-spirv: 8).
// VEC8: module attributes {tang.target = #tang.target<chip = "portable", {{.*}}, vector_bytes = 8>}
// BADVEC: error: tang-attach-target: vector-bytes must be 0 (the chip's) or a power of two up to 16, not 3
// The default chip is the H200's sm_90a.
// DEFAULT-DAG: module attributes {tang.target = #tang.target<chip = "sm_90a", device = "NVIDIA H200", sm_count = 132, shared_per_block = 232448, shared_per_sm = 233472, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = wgmma, tma = true, clusters = true, l2_bytes = 62914560, dram_bytes_per_s = 4814304000000, tensor_ops_per_s = 1070530560000000, fp32_ops_per_s = 66908160000000>}
module {
}

// -----

// A module that brings its own facts for the chip keeps them.
// CHECK: module attributes {tang.target = #tang.target<chip = "sm_80", device = "an A100 PCIe 40GB", sm_count = 108, shared_per_block = 166912
// DEFAULT-DAG: error: tang-attach-target: the module's tang.target is for chip 'sm_80', not 'sm_90a'
module attributes {tang.target = #tang.target<chip = "sm_80", device = "an A100 PCIe 40GB", sm_count = 108, shared_per_block = 166912, shared_per_sm = 167936, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = mma_sync, tma = false, clusters = false>} {
}
