// RUN: tang-opt %s --tang-lower-metal -o /dev/null | FileCheck %s

// The kernel form printed as Metal Shading Language: the OpenCL C bodies,
// buffers bound in parameter order, work-item ids from the position
// attributes; f16 stays half (Metal has it natively; the arithmetic is f32
// as in every backend).
// CHECK: #include <metal_stdlib>
// CHECK: #define get_group_id(d) ((long)tang_group[(d)])
// CHECK: kernel void main_k0(device half *a0 {{\[\[buffer\(0\)\]\]}}, device half *a1 {{\[\[buffer\(1\)\]\]}}, uint3 tang_group {{\[\[threadgroup_position_in_grid\]\]}}, uint3 tang_local {{\[\[thread_position_in_threadgroup\]\]}},
// CHECK: half {{v[0-9]+}} = a0[{{v[0-9]+}}];
// CHECK: float {{v[0-9]+}} = (float){{v[0-9]+}};
func.func @main(%x: tensor<64xf16>) -> tensor<64xf16> {
  %y = tang.comprehension (%i) [64] : tensor<64xf16> {
    %v = tang.read %x[%i] : tensor<64xf16>
    %w = arith.mulf %v, %v : f16
    tang.yield %w : f16
  }
  return %y : tensor<64xf16>
}
