// RUN: tang-opt %s --tang-attach-spirv-entry-points --split-input-file --verify-diagnostics | FileCheck %s

// The kernel form's block size becomes the SPIR-V entry point's.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 2, 1]>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel attributes {known_block_size = array<i32: 64, 2, 1>} {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{has no known_block_size for its SPIR-V entry point}}
    gpu.func @unsized() kernel {
      gpu.return
    }
  }
}
