// The printers' shared diagnostics name the language being printed.
// RUN: not tang-translate --to-metal %s 2>&1 | FileCheck %s --check-prefix=METAL
// RUN: not tang-translate --to-c %s 2>&1 | FileCheck %s --check-prefix=C
// RUN: not tang-translate --to-wgsl %s 2>&1 | FileCheck %s --check-prefix=WGSL
// RUN: not tang-translate --to-opencl %s 2>&1 | FileCheck %s --check-prefix=OPENCL

// METAL: error: 'gpu.barrier' op has no Metal printer
// C: error: 'gpu.barrier' op has no C printer
// WGSL: error: 'gpu.barrier' op has no WGSL printer
// OPENCL: error: 'gpu.barrier' op has no OpenCL C printer
module attributes {gpu.container_module} {
  gpu.module @tang_kernels {
    gpu.func @k(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      gpu.barrier
      gpu.return
    }
  }
}
