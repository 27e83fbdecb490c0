// RUN: tang-opt %s --tang-triangular-scan | FileCheck %s

// The prefix sum of examples/prefix_sum.mlir: a scan of the summand, the
// mask gone.
// CHECK-LABEL: func.func @prefix_sum
// CHECK: %[[Y:.*]] = tang.scan along (%[[T:.*]]) [64] monoid(add) : tensor<64xf32> {
// CHECK-NEXT: %[[X:.*]] = tang.read %{{.*}}[%[[T]]] : tensor<64xf32>
// CHECK-NEXT: tang.yield %[[X]] : f32
// CHECK: return %[[Y]]
func.func @prefix_sum(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
    %xk = tang.read %x[%k] : tensor<64xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vi : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %xk, %zero : f32
    tang.yield %v : f32
  }
  return %y : tensor<64xf32>
}

// A running max along the rows of a batch, the mask written i >= k.
// CHECK-LABEL: func.func @running_max
// CHECK: tang.scan (%[[B:.*]]) along (%[[T:.*]]) [4, 32] monoid(max) : tensor<4x32xf32>
// CHECK: tang.read %{{.*}}[%[[B]], %[[T]]]
// CHECK-NOT: arith.select
func.func @running_max(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %y = tang.comprehension (%b, %i) reduce (%k) [4, 32, 32] monoid(max) : tensor<4x32xf32> {
    %xk = tang.read %x[%b, %k] : tensor<4x32xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi uge, %vi, %vk : i32
    %ninf = arith.constant 0xFF800000 : f32
    %v = arith.select %keep, %xk, %ninf : f32
    tang.yield %v : f32
  }
  return %y : tensor<4x32xf32>
}

// A linear recurrence under a user monoid that is not commutative: both
// yields masked by the identity's components, one mask.
// CHECK-LABEL: func.func @recurrence
// CHECK: %[[S:.*]]:2 = tang.scan along (%[[T:.*]]) [16] monoid(@affine_map) : tensor<16xf32>, tensor<16xf32>
// CHECK-NOT: arith.select
// CHECK: return %[[S]]#1
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}
func.func @recurrence(%g: tensor<16xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
  %A, %h = tang.comprehension (%t) reduce (%k) [16, 16] monoid(@affine_map) : tensor<16xf32>, tensor<16xf32> {
    %gk = tang.read %g[%k] : tensor<16xf32>
    %xk = tang.read %x[%k] : tensor<16xf32>
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %vt = tang.index %t : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vt : i32
    %a = arith.select %keep, %gk, %one : f32
    %b = arith.select %keep, %xk, %zero : f32
    tang.yield %a, %b : f32, f32
  }
  return %h : tensor<16xf32>
}

// Left alone: a summand that depends on i, a strict mask, a mask by a
// value that is not the identity, a mask on an index that is not the last.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tang.scan
// CHECK: return
func.func @left_alone(%x: tensor<64xf32>, %m: tensor<4x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x4xf32>) {
  %a = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
    %xk = tang.read %x[%k] : tensor<64xf32>
    %xi = tang.read %x[%i] : tensor<64xf32>
    %p = arith.mulf %xk, %xi : f32
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vi : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %p, %zero : f32
    tang.yield %v : f32
  }
  %b = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
    %xk = tang.read %x[%k] : tensor<64xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi slt, %vk, %vi : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %xk, %zero : f32
    tang.yield %v : f32
  }
  %c = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
    %xk = tang.read %x[%k] : tensor<64xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vi : i32
    %one = arith.constant 1.0 : f32
    %v = arith.select %keep, %xk, %one : f32
    tang.yield %v : f32
  }
  %d = tang.comprehension (%i, %r) reduce (%k) [64, 4, 64] monoid(add) : tensor<64x4xf32> {
    %xk = tang.read %m[%r, %k] : tensor<4x64xf32>
    %vi = tang.index %i : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vi : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %xk, %zero : f32
    tang.yield %v : f32
  }
  return %a, %b, %c, %d : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x4xf32>
}
