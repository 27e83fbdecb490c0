// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse | tang-translate --to-c | FileCheck %s
// The --tang-lower-c pipeline prints with the same printer:
// RUN: tang-opt %s --tang-lower-c -o /dev/null > %t.pipeline
// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse | tang-translate --to-c > %t.translate
// RUN: diff %t.pipeline %t.translate

// tang-translate --to-c prints the kernel form (one gpu.module, after
// the target's preparation passes) as source.
// CHECK: // C11, printed by tang from the kernel form
// CHECK: static void main_k0(const long *tang_ids, float *restrict a0, float *restrict a1) {
// CHECK: float v[[Y:[0-9]+]] = v{{[0-9]+}} * v{{[0-9]+}};
// CHECK: a1[{{.*}}] = v[[Y]];
// The launcher runs every work item of a launch in turn.
// CHECK: tang_launch_main_k0(
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
