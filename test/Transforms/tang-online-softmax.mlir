// RUN: tang-opt %s --tang-online-softmax --split-input-file | FileCheck %s
// RUN: tang-opt %tang_src/examples/attention.mlir --tang-fuse --tang-online-softmax | FileCheck %s --check-prefix=ATTN
// RUN: tang-opt %tang_src/examples/causal_attention.mlir --tang-fuse --tang-online-softmax | FileCheck %s --check-prefix=CAUSAL
// RUN: tang-opt %tang_src/examples/gqa_attention.mlir --tang-fuse --tang-online-softmax | FileCheck %s --check-prefix=GQA
// RUN: tang-opt %tang_src/examples/alibi_attention.mlir --tang-fuse --tang-online-softmax | FileCheck %s --check-prefix=ALIBI
// RUN: tang-opt %tang_src/examples/transformer_block.mlir --tang-fuse --tang-online-softmax 2>/dev/null | FileCheck %s --check-prefix=BLOCK
// RUN: tang-opt %tang_src/examples/gpt2_block.mlir --tang-fuse --tang-online-softmax 2>/dev/null | FileCheck %s --check-prefix=BLOCK
// RUN: tang-opt %tang_src/examples/softmax.mlir --tang-fuse --tang-online-softmax | FileCheck %s --check-prefix=SOFTMAX

// Naive attention (QK^T, max, sum of exp, divide, PV: 5 comprehensions)
// becomes ONE comprehension under the online-softmax monoid: the score (a
// nested, scaled contraction over the head dimension) and the value.
// ATTN: %[[O:.*]] = tang.comprehension (%[[B:.*]], %[[H:.*]], %[[I:.*]], %[[D:.*]]) reduce (%[[J:.*]]) [2, 4, 16, 8, 16] monoid(online_softmax)
// ATTN-NEXT: %[[S:.*]] = tang.comprehension reduce (%[[E:.*]]) [8] monoid(add) : f32
// ATTN: tang.read %arg0[%[[B]], %[[H]], %[[I]], %[[E]]]
// ATTN: tang.read %arg1[%[[B]], %[[H]], %[[J]], %[[E]]]
// ATTN: %[[V:.*]] = tang.read %arg2[%[[B]], %[[H]], %[[J]], %[[D]]]
// ATTN: tang.yield %[[S]], %[[V]] : f32, f32
// ATTN-NOT: monoid(max)
// ATTN-NOT: tang.comprehension (
// ATTN: return %[[O]]

// The causal mask is part of the score: select(j <= i, s, -inf).
// CAUSAL: tang.comprehension (%{{.*}}, %{{.*}}, %[[I:.*]], %{{.*}}) reduce (%[[J:.*]]) [2, 4, 16, 8, 16] monoid(online_softmax)
// CAUSAL: %[[VI:.*]] = tang.index %[[I]] : i32
// CAUSAL: %[[VJ:.*]] = tang.index %[[J]] : i32
// CAUSAL: %[[KEEP:.*]] = arith.cmpi sle, %[[VJ]], %[[VI]] : i32
// CAUSAL: %[[MS:.*]] = arith.select %[[KEEP]], %{{.*}}, %{{.*}} : f32
// CAUSAL: tang.yield %[[MS]], %{{.*}} : f32, f32
// CAUSAL-NOT: monoid(max)

// Grouped-query attention: K and V are read through the head-sharing view.
// GQA: tang.comprehension (%[[B:.*]], %[[H:.*]], %{{.*}}, %[[D:.*]]) reduce (%[[J:.*]]) [2, 4, 16, 8, 16] monoid(online_softmax)
// GQA: tang.read %arg1[%[[B]], %[[H]] floordiv 2, %[[J]], %{{.*}}]
// GQA: tang.read %arg2[%[[B]], %[[H]] floordiv 2, %[[J]], %[[D]]]
// GQA-NOT: monoid(max)

// Attention with an ALiBi bias (a per-head slope broadcast through a view
// times j - i): the view folds into the reads of every copy of the scores,
// which then compare equal, so it is one online-softmax comprehension too.
// ALIBI-COUNT-1: monoid(online_softmax)
// ALIBI-NOT: monoid(softmax_norm)
// ALIBI-NOT: monoid(max)

// The attention core of the pre-norm (RMSNorm, SwiGLU) and GPT-2 (LayerNorm
// with biases, biased projections, GELU) blocks is one online-softmax
// comprehension: the work bound keeps the projections out of the scores,
// and the chain fuses whole.
// BLOCK-COUNT-1: monoid(online_softmax)
// BLOCK-NOT: monoid(max)

// Softmax: the max and the sum of exp become one single-pass normaliser.
// SOFTMAX: %[[N:.*]]:2 = tang.comprehension reduce (%{{.*}}) [32] monoid(softmax_norm) : f32, f32
// SOFTMAX: arith.subf %{{.*}}, %[[N]]#0
// SOFTMAX: arith.divf %{{.*}}, %[[N]]#1
// SOFTMAX-NOT: monoid(max)

// logsumexp written as m + log(sum exp(x - m)) becomes m + log(l) of one
// softmax_norm comprehension.
// CHECK-LABEL: func.func @logsumexp
// CHECK: %[[N:.*]]:2 = tang.comprehension reduce (%{{.*}}) [16] monoid(softmax_norm) : f32, f32
// CHECK: %[[L:.*]] = math.log %[[N]]#1
// CHECK: arith.addf %[[N]]#0, %[[L]]
// CHECK-NOT: monoid(max)
func.func @logsumexp(%X: tensor<4x16xf32>) -> tensor<4xf32> {
  %lse = tang.comprehension (%i) [4] : tensor<4xf32> {
    %m = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      tang.yield %x : f32
    }
    %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %g = math.log %l : f32
    %s = arith.addf %m, %g : f32
    tang.yield %s : f32
  }
  return %lse : tensor<4xf32>
}

// -----

// Softmax cross-entropy against target distributions Y:
// loss[i] = sum_j Y[i, j] * (lse_i - x[i, j]); the lse is one softmax_norm.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 16] monoid(add)
// CHECK: %[[N:.*]]:2 = tang.comprehension reduce (%{{.*}}) [16] monoid(softmax_norm)
// CHECK: math.log %[[N]]#1
// CHECK-NOT: monoid(max)
func.func @cross_entropy(%X: tensor<4x16xf32>, %Y: tensor<4x16xf32>) -> tensor<4xf32> {
  %loss = tang.comprehension (%i) reduce (%j) [4, 16] monoid(add) : tensor<4xf32> {
    %m = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      tang.yield %x : f32
    }
    %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      %m2 = tang.comprehension reduce (%q) [16] monoid(max) : f32 {
        %x2 = tang.read %X[%i, %q] : tensor<4x16xf32>
        tang.yield %x2 : f32
      }
      %d = arith.subf %x, %m2 : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %g = math.log %l : f32
    %lse = arith.addf %m, %g : f32
    %xj = tang.read %X[%i, %j] : tensor<4x16xf32>
    %yj = tang.read %Y[%i, %j] : tensor<4x16xf32>
    %nl = arith.subf %lse, %xj : f32
    %t = arith.mulf %yj, %nl : f32
    tang.yield %t : f32
  }
  return %loss : tensor<4xf32>
}

// -----

// Not a softmax: the normaliser sums exp over OTHER scores (Z, not X), so
// nothing is rewritten.
// CHECK-LABEL: func.func @different_scores
// CHECK: monoid(max)
// CHECK: monoid(add)
// CHECK-NOT: softmax_norm
// CHECK-NOT: online_softmax
func.func @different_scores(%X: tensor<4x16xf32>, %Z: tensor<4x16xf32>, %V: tensor<16xf32>) -> tensor<4xf32> {
  %o = tang.comprehension (%i) reduce (%j) [4, 16] monoid(add) : tensor<4xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x16xf32>
    %m = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
      %xk = tang.read %X[%i, %k] : tensor<4x16xf32>
      tang.yield %xk : f32
    }
    %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
      %zk = tang.read %Z[%i, %k] : tensor<4x16xf32>
      %d = arith.subf %zk, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %l : f32
    %v = tang.read %V[%j] : tensor<16xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %o : tensor<4xf32>
}

// -----

// Not a weighted sum of probabilities: the max is taken over a shifted
// window (x[i, k + 1]) rather than the scores themselves.
// CHECK-LABEL: func.func @shifted_max
// CHECK-NOT: online_softmax
func.func @shifted_max(%X: tensor<4x17xf32>, %V: tensor<16xf32>) -> tensor<4xf32> {
  %o = tang.comprehension (%i) reduce (%j) [4, 16] monoid(add) : tensor<4xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x17xf32>
    %m = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
      %xk = tang.read %X[%i, %k + 1] : tensor<4x17xf32>
      tang.yield %xk : f32
    }
    %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
      %xk = tang.read %X[%i, %k] : tensor<4x17xf32>
      %d = arith.subf %xk, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %l : f32
    %v = tang.read %V[%j] : tensor<16xf32>
    %pv = arith.mulf %v, %p : f32
    tang.yield %pv : f32
  }
  return %o : tensor<4xf32>
}
