// RUN: tang-opt %s --tang-grad --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tang-opt %s --tang-grad="policy=save" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SAVE
// RUN: not tang-opt %s --tang-grad="policy=sometimes" --split-input-file 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: tang-opt %s --tang-grad="wrt=0" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=WRT

// WRT-LABEL: func.func @matmul_grad
// WRT-SAME: -> tensor<16x32xf32>

// POLICY: --tang-grad: policy must be auto, save or recompute, got 'sometimes'

// The gradient of a product: one comprehension per read, over the read
// tensor's index space, the other indices summed over; the forward product
// is not needed and not kept.
// CHECK-LABEL: func.func @matmul_grad
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32x24xf32>, %[[DC:.*]]: tensor<16x24xf32>) -> (tensor<16x32xf32>, tensor<32x24xf32>)
// CHECK-NOT: monoid(add) : tensor<16x24xf32>
// CHECK: %[[DA:.*]] = tang.comprehension (%[[I:.*]], %[[K:.*]]) reduce (%[[J:.*]]) [16, 32, 24] monoid(add) : tensor<16x32xf32>
// CHECK-DAG: tang.read %[[B]][%[[K]], %[[J]]]
// CHECK-DAG: tang.read %[[DC]][%[[I]], %[[J]]]
// CHECK: %[[DB:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [32, 24, 16] monoid(add) : tensor<32x24xf32>
// CHECK: return %[[DA]], %[[DB]]
func.func @matmul(%A: tensor<16x32xf32>, %B: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
    %a = tang.read %A[%i, %k] : tensor<16x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<16x24xf32>
}

// -----

// A sliding window: the input's gradient reads the output cotangent at the
// shifted index, taken modulo the extent (always in bounds) and masked
// where the shift leaves the range.
// CHECK-LABEL: func.func @conv_grad
// CHECK: tang.comprehension (%[[P:.*]]) reduce (%[[R:.*]]) [10, 3] monoid(add) : tensor<10xf32>
// CHECK: tang.read %{{.*}}[(%[[P]] - %[[R]]) mod 8] : tensor<8xf32>
// CHECK: %[[AT:.*]] = tang.index [%[[P]] - %[[R]]] : i64
// CHECK: arith.cmpi sge, %[[AT]]
// CHECK: arith.cmpi slt, %[[AT]]
// CHECK: arith.select
func.func @conv(%x: tensor<10xf32>, %w: tensor<3xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) reduce (%r) [8, 3] monoid(add) : tensor<8xf32> {
    %a = tang.read %x[%i + %r] : tensor<10xf32>
    %b = tang.read %w[%r] : tensor<3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<8xf32>
}

// -----

// A nested sum (RMSNorm's mean square) is saved: hoisted to a tensor over
// the row index, which the gradients read.
// CHECK-LABEL: func.func @rmsnorm_grad
// CHECK: %[[SS:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [8, 32] monoid(add) : tensor<8xf32>
// CHECK: tang.read %[[SS]]
// SAVE-LABEL: func.func @rmsnorm_grad
// SAVE: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [8, 32] monoid(add) : tensor<8xf32>
func.func @rmsnorm(%X: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %Y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %ss = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<8x32xf32>
      %x2 = arith.mulf %x, %x : f32
      tang.yield %x2 : f32
    }
    %r = math.rsqrt %ss : f32
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %y = arith.mulf %x, %r : f32
    tang.yield %y : f32
  }
  return %Y : tensor<8x32xf32>
}

// -----

func.func @floor(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %a = tang.read %x[%i] : tensor<8xf32>
    %n = arith.fptosi %a : f32 to i32
    // expected-error @+1 {{'arith.sitofp' op converts an integer on a differentiated path: --tang-grad has no rule through integer arithmetic}}
    %f = arith.sitofp %n : i32 to f32
    tang.yield %f : f32
  }
  return %y : tensor<8xf32>
}

// -----

// argmax: the value's cotangent goes to the terms equal to it, shared
// among ties (a tie count saved), as max's; the index has none (one
// cotangent argument).
// CHECK-LABEL: func.func @argmax_grad
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[DV:.*]]: tensor<4xf32>) -> tensor<4x8xf32>
// CHECK: %[[V:.*]]:2 = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(argmax)
// CHECK: %[[TIES:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(add) attributes {tang.saved}
// CHECK: arith.cmpf oeq
// CHECK: tang.comprehension (%[[I:.*]], %{{.*}}) [4, 8]
// CHECK-DAG: tang.read %[[DV]][%[[I]]]
// CHECK-DAG: tang.read %[[V]]#0[%[[I]]]
// CHECK-DAG: tang.read %[[TIES]][%[[I]]]
// CHECK: arith.divf
func.func @argmax(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %v, %i = tang.comprehension (%r) reduce (%c) [4, 8] monoid(argmax) : tensor<4xf32>, tensor<4xi32> {
    %a = tang.read %x[%r, %c] : tensor<4x8xf32>
    %ci = tang.index %c : i32
    tang.yield %a, %ci : f32, i32
  }
  return %v, %i : tensor<4xf32>, tensor<4xi32>
}

// -----

// Coordinates that combine indices: a head's columns of a concatenated
// projection (`h * 4 + e + 8`, e in [0, 4)) and a reshape's (c floordiv 4,
// c mod 4). Their gradients are computed over the read's own indices (no
// sum over the head, which the column determines) and gathered into the
// tensor through the inverse map, masked to the columns the read covers.
// CHECK-LABEL: func.func @heads_grad
// CHECK: %[[DRESHAPED:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) [6, 8] : tensor<6x8xf32>
// CHECK: %[[DK:.*]] = tang.comprehension (%{{.*}}, %{{.*}}, %{{.*}}) reduce (%{{.*}}) [6, 2, 4, 4] monoid(add) : tensor<6x2x4xf32>
// CHECK: tang.comprehension (%[[L:.*]], %[[X:.*]]) [6, 24] : tensor<6x24xf32>
// CHECK: tang.read %[[DK]][%[[L]], (%[[X]] floordiv 4) mod 2, %[[X]] mod 4]
// CHECK: %[[AT:.*]] = tang.index [%[[X]] floordiv 4 - 2] : i64
// CHECK: arith.cmpi sge, %[[AT]]
// CHECK: arith.cmpi slt, %[[AT]]
// CHECK: arith.select
// CHECK: tang.comprehension (%[[B:.*]], %[[H:.*]], %[[D:.*]]) [6, 2, 4] : tensor<6x2x4xf32>
// CHECK-NEXT: %[[V:.*]] = tang.read %[[DRESHAPED]][%[[B]], %[[H]] * 4 + %[[D]]]
// CHECK-NEXT: tang.yield %[[V]]
func.func @heads(%qkv: tensor<6x24xf32>, %w: tensor<4x4xf32>, %o: tensor<6x2x4xf32>) -> (tensor<6x2x4xf32>, tensor<6x8xf32>) {
  %y = tang.comprehension (%l, %h, %d) reduce (%e) [6, 2, 4, 4] monoid(add) : tensor<6x2x4xf32> {
    %k = tang.read %qkv[%l, %h * 4 + %e + 8] : tensor<6x24xf32>
    %v = tang.read %w[%e, %d] : tensor<4x4xf32>
    %p = arith.mulf %k, %v : f32
    tang.yield %p : f32
  }
  %z = tang.comprehension (%l, %c) [6, 8] : tensor<6x8xf32> {
    %v = tang.read %o[%l, %c floordiv 4, %c mod 4] : tensor<6x2x4xf32>
    %t = math.tanh %v : f32
    tang.yield %t : f32
  }
  return %y, %z : tensor<6x2x4xf32>, tensor<6x8xf32>
}

// -----

// A cotangent widened to f32 for a product computed in f32 is read as the
// 16-bit tensor it copies (extended at the read): the gradient's products
// take 16-bit operands, and no f32 copy is made.
// CHECK-LABEL: func.func @widened_grad
// CHECK-SAME: %[[DY:[^:]*]]: tensor<8x16xbf16>) -> (tensor<8x12xbf16>, tensor<12x16xbf16>)
// CHECK-NOT: tensor<8x16xf32>
// CHECK: tang.read %[[DY]]
// CHECK-NEXT: arith.extf
func.func @widened(%a: tensor<8x12xbf16>, %b: tensor<12x16xbf16>) -> tensor<8x16xbf16> {
  %c = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xbf16> {
    %s = tang.comprehension reduce (%k) [12] monoid(add) : f32 {
      %x = tang.read %a[%i, %k] : tensor<8x12xbf16>
      %y = tang.read %b[%k, %j] : tensor<12x16xbf16>
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      tang.yield %p : f32
    }
    %t = arith.truncf %s : f32 to bf16
    tang.yield %t : bf16
  }
  return %c : tensor<8x16xbf16>
}
