// RUN: tang-opt %s --tang-grad --split-input-file --verify-diagnostics | FileCheck %s

// The gradients of scans and scatters (numerically checked against finite
// differences in test_grad.py; this checks their form).

// An add scan: the elements' cotangent is a reverse cumulative sum, a scan
// of dy read backwards, read backwards; then through the body's exp.
// CHECK-LABEL: func.func @cumsum_grad
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[DY:.*]]: tensor<2x8xf32>)
// CHECK: %[[G:.*]] = tang.scan (%[[B:.*]]) along (%[[U:.*]]) [2, 8] monoid(add)
// CHECK-NEXT: tang.read %[[DY]][%[[B]], -%[[U]] + 7]
// CHECK: tang.read %[[G]][%{{.*}}, -%{{.*}} + 7]
// CHECK: math.exp
func.func @cumsum(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = tang.scan (%b) along (%t) [2, 8] monoid(add) : tensor<2x8xf32> {
    %a = tang.read %x[%b, %t] : tensor<2x8xf32>
    %e = math.exp %a : f32
    tang.yield %e : f32
  }
  return %y : tensor<2x8xf32>
}

// -----

// A mul scan: the general rule, a reverse scan under the composition of
// affine maps of R^1 (M, c) whose M is df/da = x[t + 1] (zero where no
// later element), then dx[t] = G[t] y[t - 1] (the identity 1 at t = 0).
// CHECK: tang.monoid @tang_grad_affine1_f32 : [f32, f32] identity [1.000000e+00 : f32, 0.000000e+00 : f32]
// CHECK-LABEL: func.func @cumprod_grad
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[DY:.*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]] = tang.scan along (%{{.*}}) [8] monoid(mul)
// CHECK: %[[R:.*]]:2 = tang.scan along (%[[U:.*]]) [8] monoid(@tang_grad_affine1_f32)
// CHECK: tang.read %[[X]][(-%[[U]]) mod 8]
// CHECK: tang.read %[[DY]][-%[[U]] + 7]
// CHECK: tang.comprehension (%[[T:.*]]) [8]
// CHECK: tang.read %[[Y]][(%[[T]] + 7) mod 8]
// CHECK: tang.read %[[R]]#1[-%[[T]] + 7]
func.func @cumprod(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.scan along (%t) [8] monoid(mul) : tensor<8xf32> {
    %a = tang.read %x[%t] : tensor<8xf32>
    tang.yield %a : f32
  }
  return %y : tensor<8xf32>
}

// -----

// An insert at a position read from data: the cache's cotangent is dy with
// the written row zeroed (an insert of zeros into dy), the new row's is dy
// gathered at the row (a dropped write: zero).
// CHECK-LABEL: func.func @insert_grad
// CHECK-SAME: (%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4xf32>, %[[POS:.*]]: tensor<i32>, %[[DY:.*]]: tensor<8x4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[DC:.*]] = tang.scatter (%[[D:.*]]) [4] into %[[DY]]
// CHECK: tang.put %[[ZERO]] at [symbol(%{{.*}}), %[[D]]] drop
// CHECK: %[[DN:.*]] = tang.comprehension (%[[E:.*]]) [4]
// CHECK: tang.gather %[[DY]][symbol(%{{.*}}), %[[E]]] zero
// CHECK: return %[[DC]], %[[DN]]
func.func @insert(%cache: tensor<8x4xf32>, %new: tensor<4xf32>, %pos: tensor<i32>) -> tensor<8x4xf32> {
  %y = tang.scatter (%d) [4] into %cache : tensor<8x4xf32> {
    %p = tang.read %pos[] : tensor<i32>
    %row = arith.index_cast %p : i32 to index
    %v = tang.read %new[%d] : tensor<4xf32>
    tang.put %v at [symbol(%row), %d] drop : f32
  }
  return %y : tensor<8x4xf32>
}

// -----

// A scatter-add: the base's cotangent is dy itself; the written values'
// are gathered from dy (a computed value is first a comprehension).
// CHECK-LABEL: func.func @scatter_add_grad
// CHECK-SAME: (%{{.*}}: tensor<6x4xf32>, %[[SRC:.*]]: tensor<9x4xf32>, %{{.*}}: tensor<9xi32>, %[[DY:.*]]: tensor<6x4xf32>)
// CHECK: tang.gather %[[DY]][symbol(%{{.*}}), %{{.*}}] : tensor<6x4xf32>
// CHECK: math.tanh
// CHECK: return %[[DY]], %{{.*}} : tensor<6x4xf32>, tensor<9x4xf32>
func.func @scatter_add(%base: tensor<6x4xf32>, %src: tensor<9x4xf32>,
                       %rows: tensor<9xi32>) -> tensor<6x4xf32> {
  %y = tang.scatter (%i, %d) [9, 4] into %base monoid(add) : tensor<6x4xf32> {
    %r = tang.read %rows[%i] : tensor<9xi32>
    %row = arith.index_cast %r : i32 to index
    %v = tang.read %src[%i, %d] : tensor<9x4xf32>
    %t = math.tanh %v : f32
    tang.put %t at [symbol(%row), %d] : f32
  }
  return %y : tensor<6x4xf32>
}

// -----

// Every point writes row %r of the whole tensor: which value survives is
// the last point's, so the values have no gradient rule.
func.func @colliding_insert(%base: tensor<6x4xf32>, %src: tensor<9x4xf32>,
                            %r: tensor<i32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'tang.scatter' op cannot be differentiated: its points may write one element more than once (index #0 is not a coordinate of its own)}}
  %y = tang.scatter (%i, %d) [9, 4] into %base : tensor<6x4xf32> {
    %p = tang.read %r[] : tensor<i32>
    %row = arith.index_cast %p : i32 to index
    %v = tang.read %src[%i, %d] : tensor<9x4xf32>
    tang.put %v at [symbol(%row), %d] : f32
  }
  return %y : tensor<6x4xf32>
}

// -----

func.func @scatter_max(%base: tensor<6x4xf32>, %src: tensor<9x4xf32>,
                       %rows: tensor<9xi32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'tang.scatter' op combines under a monoid --tang-grad has no derivative rule for (max); an insert and a scatter-add have one}}
  %y = tang.scatter (%i, %d) [9, 4] into %base monoid(max) : tensor<6x4xf32> {
    %r = tang.read %rows[%i] : tensor<9xi32>
    %row = arith.index_cast %r : i32 to index
    %v = tang.read %src[%i, %d] : tensor<9x4xf32>
    tang.put %v at [symbol(%row), %d] : f32
  }
  return %y : tensor<6x4xf32>
}

// -----

func.func @scan_argmax(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tang.scan' op scans under a monoid --tang-grad has no derivative rule for (argmax)}}
  %v, %i = tang.scan along (%t) [8] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %a = tang.read %x[%t] : tensor<8xf32>
    %k = tang.index %t : i32
    tang.yield %a, %k : f32, i32
  }
  return %v : tensor<8xf32>
}

// -----

// A user monoid over an integer count and a float: the count has no
// cotangent, so the scan's carrier has no Jacobian.
tang.monoid @count_sum : [i32, f32] identity [0 : i32, 0.0 : f32] {
^bb0(%n1: i32, %s1: f32, %n2: i32, %s2: f32):
  %n = arith.addi %n1, %n2 : i32
  %s = arith.addf %s1, %s2 : f32
  tang.yield %n, %s : i32, f32
}
func.func @scan_mixed(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tang.scan' op scans a carrier that is not floating point: --tang-grad differentiates scans of floats}}
  %n, %s = tang.scan along (%t) [8] monoid(@count_sum) : tensor<8xi32>, tensor<8xf32> {
    %a = tang.read %x[%t] : tensor<8xf32>
    %one = arith.constant 1 : i32
    tang.yield %one, %a : i32, f32
  }
  return %s : tensor<8xf32>
}
