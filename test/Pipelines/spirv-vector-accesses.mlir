// RUN: tang-opt %s --split-input-file --tang-lower-spirv="caps=Shader,Int8,StorageBuffer8BitAccess,Int64,Float16,StorageBuffer16BitAccess" | FileCheck %s

// --tang-lower-spirv's accesses: 8 bytes of 16-bit elements (4 halves, an
// aliased vector variable), one 8-bit element at a time (i8 buffers load as i32 words here; upstream's SPIR-V
// lowering loads no vector of i8: the schedule gives them none).
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @main_k0_arg_0_v4 bind(0, 0)
// CHECK: spirv.Load "StorageBuffer" {{.*}} : vector<4xf16>
func.func @main(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = tang.comprehension (%i, %j) [8, 64] : tensor<8x64xf16> {
    %v = tang.read %x[%i, %j] : tensor<8x64xf16>
    %w = arith.addf %v, %v : f16
    tang.yield %w : f16
  }
  return %y : tensor<8x64xf16>
}

// -----

// CHECK-LABEL: spirv.module
// CHECK-NOT: vector<{{[0-9]+}}xi8>
// CHECK: spirv.Load "StorageBuffer" {{.*}} : i32
// CHECK-NOT: vector<{{[0-9]+}}xi8>
func.func @main(%x: tensor<8x64xi8>) -> tensor<8x64xi8> {
  %y = tang.comprehension (%i, %j) [8, 64] : tensor<8x64xi8> {
    %v = tang.read %x[%i, %j] : tensor<8x64xi8>
    %w = arith.addi %v, %v : i8
    tang.yield %w : i8
  }
  return %y : tensor<8x64xi8>
}
