// The printers' shared diagnostics name the language being printed.
// RUN: not tang-translate --split-input-file --to-metal %s 2>&1 | FileCheck %s --check-prefix=METAL
// RUN: not tang-translate --split-input-file --to-c %s 2>&1 | FileCheck %s --check-prefix=C
// RUN: not tang-translate --split-input-file --to-wgsl %s 2>&1 | FileCheck %s --check-prefix=WGSL
// RUN: not tang-translate --split-input-file --to-opencl %s 2>&1 | FileCheck %s --check-prefix=OPENCL
// RUN: not tang-translate --split-input-file --to-c %s 2>&1 | FileCheck %s --check-prefix=C-BARRIER

// METAL: error: 'gpu.lane_id' op has no Metal printer
// C: error: 'gpu.lane_id' op has no C printer
// WGSL: error: 'gpu.lane_id' op has no WGSL printer
// OPENCL: error: 'gpu.lane_id' op has no OpenCL C printer
module attributes {gpu.container_module} {
  gpu.module @tang_kernels {
    gpu.func @k(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %l = gpu.lane_id
      gpu.return
    }
  }
}

// -----

// A barrier: C's launcher runs the work items of a block in turn.
// C-BARRIER: error: 'gpu.barrier' op is a workgroup barrier, which the C target does not have (its launcher runs work items in turn): lower without row-kernel schedules
module attributes {gpu.container_module} {
  gpu.module @tang_kernels {
    gpu.func @k(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      gpu.barrier
      gpu.return
    }
  }
}
