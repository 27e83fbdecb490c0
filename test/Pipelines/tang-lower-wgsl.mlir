// RUN: tang-opt %s --split-input-file --tang-lower-wgsl=row-kernels=0 -o /dev/null | FileCheck %s

// The kernel form printed as one WGSL module: per kernel, storage buffers
// named after it in group 0 bound in parameter order, an entry point with
// the workgroup size of the kernel form; `let` for values, `var` for
// loop-carried ones, i32 indices, constructors for conversions, select()
// with the false value first, infinities from private variables.
// CHECK: // WGSL, printed by tang from the kernel form
// CHECK-NOT: enable f16;
// CHECK: var<private> tang_inf_bits: u32 = 0x7f800000u;
// CHECK: @group(0) @binding(0) var<storage, read_write> main_k0_a0: array<f32>;
// CHECK: @group(0) @binding(1) var<storage, read_write> main_k0_a1: array<f32>;
// CHECK: @group(0) @binding(2) var<storage, read_write> main_k0_a2: array<i32>;
// CHECK: @compute @workgroup_size({{[0-9]+}}, 1, 1)
// CHECK-NEXT: fn main_k0(@builtin(workgroup_id) tang_group: vec3<u32>, @builtin(local_invocation_id) tang_local: vec3<u32>, @builtin(num_workgroups) tang_groups: vec3<u32>) {
// CHECK: let [[NINF:v[0-9]+]]: f32 = -bitcast<f32>(tang_inf_bits);
// CHECK: let {{v[0-9]+}}: i32 = i32(tang_group[0]);
// CHECK: let {{v[0-9]+}}: bool = u32({{v[0-9]+}}) < u32({{v[0-9]+}});
// CHECK: var {{v[0-9]+}}: f32 = [[NINF]];
// CHECK: for (var [[J:v[0-9]+]]: i32 = {{v[0-9]+}}; [[J]] < {{v[0-9]+}}; [[J]] += {{v[0-9]+}}) {
// CHECK: let {{v[0-9]+}}: f32 = main_k0_a0[({{v[0-9]+}}) * 32 + [[J]]];
// CHECK: let {{v[0-9]+}}: bool = {{v[0-9]+}} && {{v[0-9]+}};
// CHECK: let {{v[0-9]+}}: f32 = select({{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}});
func.func @main(%X: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %v, %idx = tang.comprehension (%i) reduce (%j) [8, 32] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %vj = tang.index %j : i32
    tang.yield %x, %vj : f32, i32
  }
  return %v, %idx : tensor<8xf32>, tensor<8xi32>
}

// -----

// f16 buffers (computed in f32 by the kernel form): `enable f16`, f16
// conversions, WGSL's names for the OpenCL built-ins.
// CHECK: enable f16;
// CHECK: var<storage, read_write> main_k0_a0: array<f16>;
// CHECK: let [[H:v[0-9]+]]: f16 = main_k0_a0[{{v[0-9]+}}];
// CHECK: let {{v[0-9]+}}: f32 = f32([[H]]);
// CHECK: inverseSqrt(
// CHECK: let {{v[0-9]+}}: f16 = f16({{v[0-9]+}});
func.func @main(%x: tensor<8xf16>) -> tensor<8xf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xf16> {
    %v = tang.read %x[%i] : tensor<8xf16>
    %h = arith.constant 0.5 : f16
    %a = arith.mulf %v, %h : f16
    %r = math.rsqrt %a : f16
    tang.yield %r : f16
  }
  return %y : tensor<8xf16>
}
