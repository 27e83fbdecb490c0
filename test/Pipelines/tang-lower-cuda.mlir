// RUN: tang-opt %s --tang-lower-cuda | FileCheck %s
// RUN: rm -rf %t && tang-opt %s --tang-lower-cuda="fuse=1 bundle=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: FileCheck %s --check-prefix=PTX < %t/tang_kernels.ptx
// RUN: not tang-opt %s --tang-lower-cuda="format=elf" 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// RUN: not tang-opt %s --tang-lower-cuda="tile-source=guess" 2>&1 | FileCheck %s --check-prefix=BADTILES

// BADTILES: Cannot find option named 'guess'

// The kernels become PTX for sm_90a in one gpu.binary; the host launch
// sequence stays in the kernel form for the bundle exporter.
// CHECK: func.func @main(%{{.*}}: memref<4x64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<4x64xf32>)
// CHECK: gpu.launch_func @tang_kernels::@main_k0
// CHECK: gpu.launch_func @tang_kernels::@main_k1
// CHECK: gpu.binary @tang_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// CHECK-SAME: .target sm_90a

// With fusion the two comprehensions become one kernel; the manifest lists
// the buffers and the launch.
// MANIFEST: "chip": "sm_90a"
// MANIFEST: "format": "ptx"
// MANIFEST: "role": "input"
// MANIFEST: "role": "input"
// MANIFEST: "role": "output"
// MANIFEST: "kernel": "main_k0"
// MANIFEST-NOT: "kernel"
// MANIFEST: "image": "tang_kernels.ptx"

// Bare-pointer kernels: one .u64 parameter per buffer.
// PTX: .visible .entry main_k0(
// PTX-NEXT: .param .u64 .ptr .align 1 main_k0_param_0,
// PTX-NEXT: .param .u64 .ptr .align 1 main_k0_param_1,
// PTX-NEXT: .param .u64 .ptr .align 1 main_k0_param_2
// PTX-NEXT: )

// BADFORMAT: error: tang-lower-cuda: format must be isa (PTX), bin (cubin) or fatbin, got 'elf'

// RMSNorm, unfused.
func.func @main(%X: tensor<4x64xf32>, %w: tensor<64xf32>) -> tensor<4x64xf32> {
  %ss = tang.comprehension (%i) reduce (%k) [4, 64] monoid(add) : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x64xf32>
    %x2 = arith.mulf %x, %x : f32
    tang.yield %x2 : f32
  }
  %y = tang.comprehension (%i, %j) [4, 64] : tensor<4x64xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x64xf32>
    %s = tang.read %ss[%i] : tensor<4xf32>
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %ms = arith.divf %s, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %r = math.rsqrt %mse : f32
    %w_j = tang.read %w[%j] : tensor<64xf32>
    %xr = arith.mulf %x, %r : f32
    %v = arith.mulf %xr, %w_j : f32
    tang.yield %v : f32
  }
  return %y : tensor<4x64xf32>
}
