// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target split-softmax-mma=true" --split-input-file --verify-diagnostics | FileCheck %s
// Which decode-attention reductions split-softmax-mma puts on tensor cores
// (SplitSoftmaxMma.cpp), and why the others keep the lane kernel.

// A per-key bias in the score (a read of the key index: ALiBi, a mask as
// -inf), head dimension 64, a bf16 query: on tensor cores, the bias added
// per key to the products' accumulators. The query is exact in bf16: one
// product per k16 step (2 n8 tiles x 4 steps); P's three parts in two
// products per n8 tile of the output (8 tiles).
// CHECK-LABEL: gpu.func @masked_k0
// CHECK: scf.for
// CHECK-COUNT-4: vector.load %arg1{{.*}} : memref<4x512x64xbf16>, vector<8xbf16>
// CHECK-COUNT-4: vector.load %arg3{{.*}} : memref<4x512x64xbf16>, vector<8xbf16>
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: memref.load %arg2
// CHECK: arith.addf
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.if
func.func @masked(%q: tensor<16x64xbf16>, %K: tensor<4x512x64xbf16>, %V: tensor<4x512x64xbf16>, %bias: tensor<512xf32>, %pos: index) -> tensor<16x64xf32> {
  %cst = arith.constant 0.125 : f32
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  %o = tang.comprehension (%h, %d) reduce (%j) [16, 64, %n] monoid(online_softmax) : tensor<16x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<16x64xbf16>
      %af = arith.extf %a : bf16 to f32
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<4x512x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %af, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %cst : f32
    %bj = tang.read %bias[%j] : tensor<512xf32>
    %sm = arith.addf %s, %bj : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<4x512x64xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %sm, %vf : f32, f32
  }
  return %o : tensor<16x64xf32>
}

// -----

// f32 keys: the lane kernel.
// CHECK-LABEL: gpu.func @f32_keys_k0
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.func @f32_keys_k0_1
func.func @f32_keys(%q: tensor<8x64xf32>, %K: tensor<2x256x64xf32>, %V: tensor<2x256x64xf32>, %pos: index) -> tensor<8x64xf32> {
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  // expected-remark @+1 {{split over its keys without tensor cores: the keys are not f16 or bf16}}
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 64, %n] monoid(online_softmax) : tensor<8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x64xf32>
      %p = arith.mulf %a, %k : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x256x64xf32>
    tang.yield %dot, %v : f32, f32
  }
  return %o : tensor<8x64xf32>
}

// -----

// An f32 query beside f16 keys: f16 holds neither its range nor its
// rounding's remainder.
func.func @f16_keys(%q: tensor<8x64xf32>, %K: tensor<2x256x64xf16>, %V: tensor<2x256x64xf16>, %pos: index) -> tensor<8x64xf32> {
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  // expected-remark @+1 {{the query is neither of the keys' type nor f32 beside bf16 keys}}
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 64, %n] monoid(online_softmax) : tensor<8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x64xf16>
      %kf = arith.extf %k : f16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x256x64xf16>
    %vf = arith.extf %v : f16 to f32
    tang.yield %dot, %vf : f32, f32
  }
  return %o : tensor<8x64xf32>
}

// -----

// 96 value columns (not a multiple of 64).
func.func @narrow(%q: tensor<8x64xf32>, %K: tensor<2x256x64xbf16>, %V: tensor<2x256x96xbf16>, %pos: index) -> tensor<8x96xf32> {
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  // expected-remark @+1 {{the head dimensions are not multiples of 32 (keys) and 64 (values) up to 256}}
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 96, %n] monoid(online_softmax) : tensor<8x96xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x256x96xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %dot, %vf : f32, f32
  }
  return %o : tensor<8x96xf32>
}

// -----

// A score that is not a function of one dot product (two of them).
func.func @two_dots(%q: tensor<8x64xf32>, %K: tensor<2x256x64xbf16>, %V: tensor<2x256x64xbf16>, %pos: index) -> tensor<8x64xf32> {
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  // expected-remark @+1 {{more than one nested reduction}}
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 64, %n] monoid(online_softmax) : tensor<8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %dot2 = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      tang.yield %kf : f32
    }
    %s = arith.addf %dot, %dot2 : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x256x64xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %s, %vf : f32, f32
  }
  return %o : tensor<8x64xf32>
}
