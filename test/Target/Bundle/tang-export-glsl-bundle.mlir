// RUN: rm -rf %t && tang-opt %s --convert-tang-to-gpu --tang-narrow-32-bit-kernels --tang-export-glsl-bundle="dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: FileCheck %s --input-file=%t/main_k0.comp --check-prefix=SHADER
// RUN: test -s %t/tang_kernels.spv
// RUN: tang-opt %s --convert-tang-to-gpu --tang-narrow-32-bit-kernels --tang-export-glsl-bundle -o /dev/null | FileCheck %s --check-prefix=STDOUT

// Each kernel a shader, compiled by glslangValidator and linked by
// spirv-link into one SPIR-V module the Vulkan host runs.
// CHECK-DAG: "format": "spirv"
// CHECK-DAG: "image": "tang_kernels.spv"
// CHECK-DAG: "kernel": "main_k0"
// SHADER: #version 450
// SHADER: void main() {
// Without a directory, the shaders on stdout (no tools run).
// STDOUT: // GLSL 4.50 compute shader, printed by tang from the kernel form
// STDOUT: layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
