// RUN: tang-opt %s --canonicalize --convert-tang-to-gpu --canonicalize --cse --tang-narrow-32-bit-kernels | tang-translate --to-glsl | FileCheck %s

// tang-translate --to-glsl prints the kernel form (one gpu.module, after
// the target's preparation passes) as source.
// One shader per kernel, after a line naming its file.
// CHECK: // main_k0.comp
// CHECK-NEXT: // GLSL 4.50 compute shader, printed by tang from the kernel form
// CHECK: layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;
// CHECK: void main() {
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
