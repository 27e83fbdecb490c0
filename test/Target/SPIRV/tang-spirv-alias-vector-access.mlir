// RUN: tang-opt %s --split-input-file --pass-pipeline='builtin.module(spirv.module(tang-spirv-alias-vector-access))' --verify-diagnostics | FileCheck %s

// A vector load of a buffer of halves and a vector store of a buffer of
// floats (upstream's pointer bitcasts) become access chains into second
// variables bound to the same buffers, of vectors, at the element index
// divided by the vector's length. The output, written through the alias
// only, is not marked Aliased; the input, read through both and written
// through neither, neither.
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @in bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f16, stride=2> [0])>, StorageBuffer>
// CHECK-NEXT: spirv.GlobalVariable @in_v4 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<16 x vector<4xf16>, stride=8> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @out bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK-NEXT: spirv.GlobalVariable @out_v2 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xf32>, stride=8> [0])>, StorageBuffer>
// CHECK-NOT: aliased
// CHECK: spirv.func @k(%[[I:.*]]: i32)
// CHECK: %[[A:.*]] = spirv.mlir.addressof @in_v4
// CHECK: %[[TWO:.*]] = spirv.Constant 2 : i32
// CHECK: %[[J:.*]] = spirv.ShiftRightLogical %[[I]], %[[TWO]] : i32, i32
// CHECK: %[[P:.*]] = spirv.AccessChain %[[A]][%{{.*}}, %[[J]]] {{.*}} -> !spirv.ptr<vector<4xf16>, StorageBuffer>
// CHECK: spirv.Load "StorageBuffer" %[[P]] : vector<4xf16>
// CHECK: spirv.mlir.addressof @out_v2
// CHECK: %[[ONE:.*]] = spirv.Constant 1 : i32
// CHECK: spirv.ShiftRightLogical %[[I]], %[[ONE]] : i32, i32
// CHECK: spirv.Store "StorageBuffer" {{.*}} : vector<2xf32>
// CHECK-NOT: spirv.Bitcast
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @in bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f16, stride=2> [0])>, StorageBuffer>
  spirv.GlobalVariable @out bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) "None" {
    %c0 = spirv.Constant 0 : i32
    %in = spirv.mlir.addressof @in : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f16, stride=2> [0])>, StorageBuffer>
    %p = spirv.AccessChain %in[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f16, stride=2> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f16, StorageBuffer>
    %pv = spirv.Bitcast %p : !spirv.ptr<f16, StorageBuffer> to !spirv.ptr<vector<4xf16>, StorageBuffer>
    %v = spirv.Load "StorageBuffer" %pv : vector<4xf16>
    %out = spirv.mlir.addressof @out : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %q = spirv.AccessChain %out[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %qv = spirv.Bitcast %q : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<2xf32>, StorageBuffer>
    %w = spirv.Constant dense<1.0> : vector<2xf32>
    spirv.Store "StorageBuffer" %qv, %w : vector<2xf32>
    spirv.Return
  }
}

// -----

// A buffer read through its scalar variable and written through its
// vector alias: both get the Aliased decoration.
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @buf bind(0, 0) {aliased} :
// CHECK-NEXT: spirv.GlobalVariable @buf_v2 bind(0, 0) {aliased} :
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) "None" {
    %c0 = spirv.Constant 0 : i32
    %b = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %p = spirv.AccessChain %b[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %x = spirv.Load "StorageBuffer" %p : f32
    %pv = spirv.Bitcast %p : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<2xf32>, StorageBuffer>
    %w = spirv.CompositeConstruct %x, %x : (f32, f32) -> vector<2xf32>
    spirv.Store "StorageBuffer" %pv, %w : vector<2xf32>
    spirv.Return
  }
}

// -----

// A pointer bitcast of another shape: an error at the bitcast.
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) "None" {
    %c0 = spirv.Constant 0 : i32
    %b = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %p = spirv.AccessChain %b[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    // expected-error @+1 {{'spirv.Bitcast' op is a pointer bitcast that tang-spirv-alias-vector-access cannot replace: the vector's elements are not the buffer's, or their number is not a power of two dividing the buffer's}}
    %pv = spirv.Bitcast %p : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<3xf32>, StorageBuffer>
    %v = spirv.Load "StorageBuffer" %pv : vector<3xf32>
    spirv.Return
  }
}

// -----

// SPIR-V 1.4 and later: an entry point lists every global variable it
// uses, the alias with the variable it aliases.
// CHECK-LABEL: spirv.module
// CHECK: spirv.EntryPoint "GLCompute" @k, @buf, @buf_v4
spirv.module Logical GLSL450 requires #spirv.vce<v1.4, [Shader, Float16, StorageBuffer16BitAccess], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]> {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f16, stride=2> [0])>, StorageBuffer>
  spirv.func @k() "None" {
    %c0 = spirv.Constant 0 : i32
    %c4 = spirv.Constant 4 : i32
    %b = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f16, stride=2> [0])>, StorageBuffer>
    %p = spirv.AccessChain %b[%c0, %c4] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f16, stride=2> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f16, StorageBuffer>
    %pv = spirv.Bitcast %p : !spirv.ptr<f16, StorageBuffer> to !spirv.ptr<vector<4xf16>, StorageBuffer>
    %v = spirv.Load "StorageBuffer" %pv : vector<4xf16>
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k, @buf
}

// -----

// Elements that are not contiguous (a padded stride): refused.
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=8> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) "None" {
    %c0 = spirv.Constant 0 : i32
    %b = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=8> [0])>, StorageBuffer>
    %p = spirv.AccessChain %b[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    // expected-error @+1 {{the buffer's elements are not contiguous (stride 8)}}
    %pv = spirv.Bitcast %p : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<2xf32>, StorageBuffer>
    %v = spirv.Load "StorageBuffer" %pv : vector<2xf32>
    spirv.Return
  }
}

