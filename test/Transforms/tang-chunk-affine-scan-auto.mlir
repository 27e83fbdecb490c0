// RUN: tang-opt %s --tang-chunk-affine-scan -verify-diagnostics | FileCheck %s

// With the chunk chosen by the pass (no chunk= option): one step (a decode
// update) becomes its map, S = d S0 + u (w^T S0) + p v^T, the transition
// never formed (w^T S0 a saved reduction: every row reads it), and the
// reader o = S^T q is reassociated, d (q^T S0) + (q . u) (w^T S0) + (q . p)
// v: q^T S0 beside w^T S0 (one pass over S0 for both), no state left when
// nothing else reads it. A scan of a prime length past 64 steps, which no
// chunk of more than one step divides, is left as it is, with a remark.
// The gated delta rule of tang-chunk-affine-scan.mlir at 1 and 67 steps.

// CHECK-LABEL: func.func @decode
// CHECK-NOT: tang.tensor_scan
// CHECK: %[[WS:.*]] = tang.comprehension (%{{.*}}, %{{.*}}, %{{.*}}) reduce (%{{.*}}) [2, 1, 3, 2] monoid(add) attributes {tang.saved} : tensor<2x1x3xf32>
// CHECK: %[[QS:.*]] = tang.comprehension (%{{.*}}, %{{.*}}, %{{.*}}) reduce (%{{.*}}) [2, 1, 3, 2] monoid(add) attributes {tang.saved} : tensor<2x1x3xf32>
// CHECK: %[[QU:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [2, 1, 2] monoid(add) : tensor<2x1xf32>
// CHECK: %[[QP:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [2, 1, 2] monoid(add) : tensor<2x1xf32>
// CHECK: tang.comprehension (%{{.*}}, %{{.*}}, %{{.*}}) [2, 1, 3] : tensor<2x1x3xf32>
// CHECK-DAG: math.exp
// CHECK-DAG: tang.read %[[QS]]
// CHECK-DAG: tang.read %[[QU]]
// CHECK-DAG: tang.read %[[WS]]
// CHECK-DAG: tang.read %[[QP]]
// CHECK-NOT: tensor<2x1x2x3xf32>
// CHECK: return
// CHECK-LABEL: func.func @prime
// CHECK: tang.tensor_scan @affine
// CHECK-NOT: tang.chunked
tang.monoid @affine : [tensor<2x2xf32>, tensor<2x3xf32>] identity [] {
^bb0(%a1: tensor<2x2xf32>, %b1: tensor<2x3xf32>, %a2: tensor<2x2xf32>, %b2: tensor<2x3xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [2, 2, 2] monoid(add) : tensor<2x2xf32> {
    %x = tang.read %a2[%i, %k] : tensor<2x2xf32>
    %y = tang.read %a1[%k, %j] : tensor<2x2xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %b = tang.comprehension (%i, %j) [2, 3] : tensor<2x3xf32> {
    %s = tang.comprehension reduce (%k) [2] monoid(add) : f32 {
      %x = tang.read %a2[%i, %k] : tensor<2x2xf32>
      %y = tang.read %b1[%k, %j] : tensor<2x3xf32>
      %p = arith.mulf %y, %x : f32
      tang.yield %p : f32
    }
    %z = tang.read %b2[%i, %j] : tensor<2x3xf32>
    %r = arith.addf %z, %s : f32
    tang.yield %r : f32
  }
  tang.yield %a, %b : tensor<2x2xf32>, tensor<2x3xf32>
}
func.func @decode(%g: tensor<2x1xf32>, %beta: tensor<2x1xf32>, %k: tensor<2x1x2xf32>, %v: tensor<2x1x3xf32>, %q: tensor<2x1x2xf32>) -> tensor<2x1x3xf32> {
  %A = tang.comprehension (%p, %t, %i, %j) [2, 1, 2, 2] : tensor<2x1x2x2xf32> {
    %gt = tang.read %g[%p, %t] : tensor<2x1xf32>
    %bt = tang.read %beta[%p, %t] : tensor<2x1xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x1x2xf32>
    %kj = tang.read %k[%p, %t, %j] : tensor<2x1x2xf32>
    %alpha = math.exp %gt : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %eq = arith.cmpi eq, %ii, %jj : i32
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %id = arith.select %eq, %one, %zero : f32
    %bk = arith.mulf %bt, %ki : f32
    %kk = arith.mulf %bk, %kj : f32
    %d = arith.subf %id, %kk : f32
    %a = arith.mulf %alpha, %d : f32
    tang.yield %a : f32
  }
  %B = tang.comprehension (%p, %t, %i, %j) [2, 1, 2, 3] : tensor<2x1x2x3xf32> {
    %bt = tang.read %beta[%p, %t] : tensor<2x1xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x1x2xf32>
    %vj = tang.read %v[%p, %t, %j] : tensor<2x1x3xf32>
    %bk = arith.mulf %bt, %ki : f32
    %b = arith.mulf %bk, %vj : f32
    tang.yield %b : f32
  }
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<2x1x2x2xf32>, tensor<2x1x2x3xf32>) -> tensor<2x1x2x2xf32>, tensor<2x1x2x3xf32>
  %o = tang.comprehension (%p, %t, %j) reduce (%i) [2, 1, 3, 2] monoid(add) : tensor<2x1x3xf32> {
    %s = tang.read %S[%p, %t, %i, %j] : tensor<2x1x2x3xf32>
    %x = tang.read %q[%p, %t, %i] : tensor<2x1x2xf32>
    %m = arith.mulf %s, %x : f32
    tang.yield %m : f32
  }
  return %o : tensor<2x1x3xf32>
}


func.func @prime(%g: tensor<2x67xf32>, %beta: tensor<2x67xf32>, %k: tensor<2x67x2xf32>, %v: tensor<2x67x3xf32>, %q: tensor<2x67x2xf32>) -> tensor<2x67x3xf32> {
  %A = tang.comprehension (%p, %t, %i, %j) [2, 67, 2, 2] : tensor<2x67x2x2xf32> {
    %gt = tang.read %g[%p, %t] : tensor<2x67xf32>
    %bt = tang.read %beta[%p, %t] : tensor<2x67xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x67x2xf32>
    %kj = tang.read %k[%p, %t, %j] : tensor<2x67x2xf32>
    %alpha = math.exp %gt : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %eq = arith.cmpi eq, %ii, %jj : i32
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %id = arith.select %eq, %one, %zero : f32
    %bk = arith.mulf %bt, %ki : f32
    %kk = arith.mulf %bk, %kj : f32
    %d = arith.subf %id, %kk : f32
    %a = arith.mulf %alpha, %d : f32
    tang.yield %a : f32
  }
  %B = tang.comprehension (%p, %t, %i, %j) [2, 67, 2, 3] : tensor<2x67x2x3xf32> {
    %bt = tang.read %beta[%p, %t] : tensor<2x67xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x67x2xf32>
    %vj = tang.read %v[%p, %t, %j] : tensor<2x67x3xf32>
    %bk = arith.mulf %bt, %ki : f32
    %b = arith.mulf %bk, %vj : f32
    tang.yield %b : f32
  }
  // expected-remark @+1 {{tang-chunk-affine-scan: not chunked: no chunk of 2 to 64 steps divides its 67 steps}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<2x67x2x2xf32>, tensor<2x67x2x3xf32>) -> tensor<2x67x2x2xf32>, tensor<2x67x2x3xf32>
  %o = tang.comprehension (%p, %t, %j) reduce (%i) [2, 67, 3, 2] monoid(add) : tensor<2x67x3xf32> {
    %s = tang.read %S[%p, %t, %i, %j] : tensor<2x67x2x3xf32>
    %x = tang.read %q[%p, %t, %i] : tensor<2x67x2xf32>
    %m = arith.mulf %s, %x : f32
    tang.yield %m : f32
  }
  return %o : tensor<2x67x3xf32>
}

