// RUN: not tang-translate %s --to-opencl 2>&1 | FileCheck %s
// RUN: not tang-translate %s --to-glsl 2>&1 | FileCheck %s --check-prefix=GLSL

// A module without the kernel form (tang-opt --convert-tang-to-gpu first).
// CHECK: error: --to-opencl needs exactly one gpu.module (the kernel form, as --convert-tang-to-gpu leaves it), found 0
// GLSL: error: --to-glsl needs exactly one gpu.module
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
