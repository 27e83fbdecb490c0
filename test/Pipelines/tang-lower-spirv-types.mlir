// RUN: tang-opt %s --split-input-file --tang-lower-spirv | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: %if spirv-val %{ bash %S/Inputs/lower-all-examples.sh spirv tang-opt %spirv_val %t %S/Inputs/spirv-types/*.mlir 2>&1 | FileCheck %s --check-prefix=VALID %}

// spirv-val accepts the modules of an f16 program and of float and i64
// indices.
// VALID: ok half
// VALID: ok index_i64

// f16 buffers are 16-bit storage (2-byte elements, Float16 and
// StorageBuffer16BitAccess), converted to f32 to compute and back to store.
// CHECK-LABEL: spirv.module @__spv__tang_kernels
// CHECK-SAME: StorageBuffer16BitAccess
// CHECK-SAME: Float16
// CHECK-SAME: SPV_KHR_16bit_storage
// CHECK: spirv.GlobalVariable @main_k0_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f16, stride=2> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @main_k0_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f16, stride=2> [0])>, StorageBuffer>
// CHECK: spirv.FConvert %{{.*}} : f16 to f32
// CHECK: spirv.FConvert %{{.*}} : f32 to f16
func.func @main(%x: tensor<4x16xf16>) -> tensor<4xf16> {
  %y = tang.comprehension (%i) reduce (%j) [4, 16] monoid(add) : tensor<4xf16> {
    %v = tang.read %x[%i, %j] : tensor<4x16xf16>
    %e = math.exp %v : f16
    tang.yield %e : f16
  }
  return %y : tensor<4xf16>
}

// -----

// A float computed from an index converts it through i32 (the target's
// indices have 32 bits): no Int64 capability, nothing left to legalise.
// CHECK-LABEL: spirv.module @__spv__tang_kernels
// CHECK-NOT: Int64
// CHECK-SAME: {
// CHECK: spirv.ConvertSToF %{{.*}} : i32 to f32
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %v = tang.read %x[%i] : tensor<8xf32>
    %f = tang.index %i : f32
    %w = arith.addf %v, %f : f32
    tang.yield %w : f32
  }
  return %y : tensor<8xf32>
}

// -----

// An index the program asks for as i64 is one, on the Int64 capability.
// CHECK-LABEL: spirv.module @__spv__tang_kernels
// CHECK-SAME: Int64
// CHECK: spirv.SConvert %{{.*}} : i32 to i64
func.func @main(%x: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    %n = tang.index %i : i64
    %t = arith.trunci %n : i64 to i32
    %w = arith.addi %v, %t : i32
    tang.yield %w : i32
  }
  return %y : tensor<8xi32>
}

// -----

// The constant predicates of arith.cmpf, which upstream's SPIR-V conversion
// does not take, become constants.
// CHECK-LABEL: spirv.module @__spv__tang_kernels
// CHECK-NOT: arith.cmpf
// CHECK: spirv.func @main_k0
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %v = tang.read %x[%i] : tensor<8xf32>
    %no = arith.cmpf false, %v, %v : f32
    %yes = arith.cmpf true, %v, %v : f32
    %zero = arith.constant 0.0 : f32
    %a = arith.select %no, %zero, %v : f32
    %b = arith.select %yes, %a, %zero : f32
    tang.yield %b : f32
  }
  return %y : tensor<8xf32>
}
