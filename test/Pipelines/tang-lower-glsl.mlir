// RUN: tang-opt %s --tang-lower-glsl=row-kernels=0 -o /dev/null | FileCheck %s

// The kernel form printed as GLSL 4.50 compute shaders, one per kernel:
// buffers as std430 storage blocks bound in parameter order, 32-bit int
// indices, GLSL constructors for conversions, the work-item ids from the
// gl_ built-ins, logical operators on bool.
// CHECK: #version 450
// CHECK: layout(local_size_x = {{[0-9]+}}, local_size_y = 1, local_size_z = 1) in;
// CHECK: layout(std430, binding = 0) buffer B0 { float a0[]; };
// CHECK: layout(std430, binding = 1) buffer B1 { float a1[]; };
// CHECK: layout(std430, binding = 2) buffer B2 { int a2[]; };
// CHECK: void main() {
// CHECK: int {{v[0-9]+}} = int(gl_WorkGroupID[0]);
// CHECK: bool {{v[0-9]+}} = uint({{v[0-9]+}}) < uint({{v[0-9]+}});
// CHECK: for (int [[J:v[0-9]+]] = {{v[0-9]+}}; [[J]] < {{v[0-9]+}}; [[J]] += {{v[0-9]+}}) {
// CHECK: bool {{v[0-9]+}} = {{v[0-9]+}} && {{v[0-9]+}};
func.func @main(%X: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %v, %idx = tang.comprehension (%i) reduce (%j) [8, 32] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %vj = tang.index %j : i32
    tang.yield %x, %vj : f32, i32
  }
  return %v, %idx : tensor<8xf32>, tensor<8xi32>
}
