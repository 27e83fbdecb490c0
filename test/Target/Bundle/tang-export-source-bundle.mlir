// RUN: rm -rf %t && tang-opt %s --convert-tang-to-gpu --tang-narrow-32-bit-kernels --tang-export-source-bundle="language=wgsl dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST
// RUN: FileCheck %s --input-file=%t/tang_kernels.wgsl --check-prefix=SOURCE
// RUN: tang-opt %s --convert-tang-to-gpu --tang-export-source-bundle="language=c" -o /dev/null | FileCheck %s --check-prefix=STDOUT
// RUN: not tang-opt %s --tang-export-source-bundle="language=metal" 2>&1 | FileCheck %s --check-prefix=NOKERNELS

// The bundle: the printed source and the manifest every runtime reads.
// MANIFEST-DAG: "format": "wgsl"
// MANIFEST-DAG: "image": "tang_kernels.wgsl"
// MANIFEST-DAG: "kernel": "main_k0"
// SOURCE: @compute @workgroup_size(128, 1, 1)
// Without a directory, the source on stdout.
// STDOUT: // C11, printed by tang from the kernel form
// STDOUT: void tang_launch_main_k0(
// NOKERNELS: error: a metal bundle needs exactly one gpu.module (the kernel form), found 0
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
