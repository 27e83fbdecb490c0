// RUN: rm -rf %t && tang-opt %s --convert-tang-to-gpu --tang-narrow-32-bit-kernels --tang-export-glsl-bundle="dir=%t" -o /dev/null
// RUN: spirv-dis %t/tang_kernels.spv | FileCheck %s

// Kernels of different block sizes linked into one module: each entry
// point keeps its own LocalSize, and no `BuiltIn WorkgroupSize` decoration
// survives (glslang puts one on every shader's gl_WorkGroupSize constant;
// in a linked module it overrides every entry point's LocalSize, and
// lavapipe ran all kernels with one block size).
// CHECK-DAG: OpExecutionMode %main_k0 LocalSize 128 1 1
// CHECK-DAG: OpExecutionMode %main_k1 LocalSize 8 1 1
// CHECK-NOT: BuiltIn WorkgroupSize
func.func @main(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  %s = tang.comprehension (%i) reduce (%j) [8, 16] monoid(add) : tensor<8xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    tang.yield %v : f32
  }
  return %y, %s : tensor<8x16xf32>, tensor<8xf32>
}
