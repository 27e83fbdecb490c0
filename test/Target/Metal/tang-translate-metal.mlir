// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse | tang-translate --to-metal | FileCheck %s
// The --tang-lower-metal pipeline prints with the same printer:
// RUN: tang-opt %s --tang-lower-metal=row-kernels=0 -o /dev/null > %t.pipeline
// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse | tang-translate --to-metal > %t.translate
// RUN: diff %t.pipeline %t.translate

// tang-translate --to-metal prints the kernel form (one gpu.module, after
// the target's preparation passes) as source.
// CHECK: // Metal Shading Language, printed by tang from the kernel form
// CHECK: kernel void main_k0(device float *a0 {{\[\[}}buffer(0){{\]\]}}, device float *a1 {{\[\[}}buffer(1){{\]\]}},
// CHECK: float v[[Y:[0-9]+]] = v{{[0-9]+}} * v{{[0-9]+}};
// CHECK: a1[{{.*}}] = v[[Y]];
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
