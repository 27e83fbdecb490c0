// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse --tang-narrow-32-bit-kernels | tang-translate --to-wgsl | FileCheck %s
// The --tang-lower-wgsl pipeline prints with the same printer:
// RUN: tang-opt %s --tang-lower-wgsl=row-kernels=0 -o /dev/null > %t.pipeline
// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse --tang-narrow-32-bit-kernels | tang-translate --to-wgsl > %t.translate
// RUN: diff %t.pipeline %t.translate

// tang-translate --to-wgsl prints the kernel form (one gpu.module, after
// the target's preparation passes) as source.
// CHECK: // WGSL, printed by tang from the kernel form
// CHECK: @group(0) @binding(1) var<storage, read_write> main_k0_a1: array<f32>;
// CHECK: @compute @workgroup_size(128, 1, 1)
// CHECK: fn main_k0(
// CHECK: let v[[Y:[0-9]+]]: f32 = v{{[0-9]+}} * v{{[0-9]+}};
// CHECK: main_k0_a1[{{.*}}] = v[[Y]];
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
