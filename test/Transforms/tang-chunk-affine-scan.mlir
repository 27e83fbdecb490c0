// RUN: tang-opt %s -split-input-file --tang-chunk-affine-scan=chunk=2 | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: tang-opt %s -split-input-file --tang-chunk-affine-scan="chunk=2 plain-operands=1" | FileCheck %s --check-prefixes=CHECK,PLAIN
// RUN: tang-opt %s -split-input-file --tang-chunk-affine-scan=chunk=2 -verify-diagnostics -o /dev/null
// RUN: not tang-opt %s -split-input-file --tang-chunk-affine-scan=chunk=3 2>&1 | FileCheck %s --check-prefix=BAD-CHUNK

// The gated delta rule on 2x3 states, 4 steps, chunks of 2: the per-step
// scan becomes a scan of 2 chunk steps (tang.chunked) under the same
// monoid; the decay enters as g (exp(g) gives g: no log); the factors u =
// -exp(g) beta k, w = k, p = beta k and v are comprehensions; the element
// producers are gone. tang-run agrees with the program as written
// (test/Python/test_qwen3_next.py checks the math at many shapes).

// CHECK-LABEL: func.func @delta
// CHECK-NOT: math.log
// CHECK: %[[LA:.*]] = tang.comprehension ({{.*}}) [2, 4] : tensor<2x4xf32> {
// CHECK-NEXT: %[[G:.*]] = tang.read %arg0
// CHECK-NEXT: tang.yield %[[G]] : f32
// With plain-operands, the factors that compute (u, p) are kept
// (tang.saved): the plan's products read them as plain operands (what
// tensor cores take); views (w, v) stay views. By default fusion takes
// them all.
// PLAIN: tang.comprehension ({{.*}}) [2, 4, 2] attributes {tang.saved}
// DEFAULT: tang.comprehension ({{.*}}) [2, 4, 2] : tensor<2x4x2xf32> {
// CHECK: arith.negf
// CHECK: tang.comprehension ({{.*}}) [2, 4, 2] : tensor<2x4x2xf32> {
// CHECK-NEXT: tang.read %arg2
// CHECK-NEXT: tang.yield
// PLAIN: tang.comprehension ({{.*}}) [2, 4, 2] attributes {tang.saved}
// DEFAULT: tang.comprehension ({{.*}}) [2, 4, 2] : tensor<2x4x2xf32> {
// CHECK: tang.scan ({{.*}}) along ({{.*}}) [2, 2, 2] monoid(add) : tensor<2x2x2xf32>
// The log decays from step s to r - 1 of a chunk, Dh[c, s, r], summed
// directly.
// CHECK: %[[DH:.*]] = tang.comprehension ({{.*}}) reduce ({{.*}}) [2, 2, 2, 2, 2] monoid(add) attributes {tang.saved} : tensor<2x2x2x2xf32>
// CHECK: arith.cmpi slt
// The chunks' triangular systems (I - L) X = Y, for the rows of W (K = 2
// columns) and of Lp V (V = 3), by forward substitution. L and Lp are
// products with their decay and mask as the epilogue, its reads plain (no
// padding: tensor cores can take them).
// CHECK: %[[L:.*]] = tang.comprehension (%[[C0:.*]], %[[C1:.*]], %[[R:.*]], %[[S:.*]]) [2, 2, 2, 2] attributes {tang.saved}
// CHECK-NEXT: tang.read %[[DH]][%[[C0]], %[[C1]], %[[S]], %[[R]]] :
// CHECK-NEXT: math.exp
// CHECK-NEXT: tang.comprehension reduce ({{.*}}) [2] monoid(add)
// CHECK: %[[LP:.*]] = tang.comprehension ({{.*}}) [2, 2, 2, 2] attributes {tang.saved}
// CHECK: tang.triangular_solve %[[L]], %{{.*}} : tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>
// CHECK: tang.read %[[LP]]
// CHECK: tang.triangular_solve %[[L]], %{{.*}} : tensor<2x2x2x2xf32>, tensor<2x2x2x3xf32>
// CHECK: tang.tensor_scan @affine({{.*}} : tensor<2x2x2x2xf32>, tensor<2x2x2x3xf32>) init({{.*}}) {tang.chunked} -> tensor<2x2x2x2xf32>, tensor<2x2x2x3xf32>
// CHECK-NOT: tang.tensor_scan
// The reader o_t = S_t^T q_t is reassociated: (q_r . u_s) and (q_r . p_s)
// per chunk (s <= r), then o from three products per chunk (q with the
// chunk's starting state, Qu with x, Qp with v); no per-step state
// [2, 4, 2, 3] is built.
// CHECK-NOT: tensor<2x4x2x3xf32> {
// CHECK: %[[QU:.*]] = tang.comprehension ({{.*}}) [2, 2, 2, 2] attributes {tang.saved}
// CHECK: arith.cmpi sle
// CHECK: %[[QP:.*]] = tang.comprehension ({{.*}}) [2, 2, 2, 2] attributes {tang.saved}
// CHECK: arith.cmpi sle
// CHECK-NOT: tensor<2x4x2x3xf32> {
// CHECK: %[[O1:.*]] = tang.comprehension ({{.*}}) reduce ({{.*}}) [2, 2, 2, 3, 2] monoid(add) attributes {tang.saved}
// CHECK: %[[O2:.*]] = tang.comprehension ({{.*}}) reduce ({{.*}}) [2, 2, 2, 3, 2] monoid(add) attributes {tang.saved}
// CHECK-NEXT: tang.read %[[QU]]
// CHECK: %[[O3:.*]] = tang.comprehension ({{.*}}) reduce ({{.*}}) [2, 2, 2, 3, 2] monoid(add) attributes {tang.saved}
// CHECK-NEXT: tang.read %[[QP]]
// CHECK: %[[O:.*]] = tang.comprehension ({{.*}}) [2, 4, 3] : tensor<2x4x3xf32> {
// CHECK-DAG: tang.read %[[O1]]
// CHECK-DAG: tang.read %[[O2]]
// CHECK-DAG: tang.read %[[O3]]
// CHECK: %[[R:.*]] = tang.comprehension ({{.*}}) [2, 4, 3] : tensor<2x4x3xf32> {
// CHECK-NEXT: tang.read %[[O]][%p0, %p1, %p2]
// CHECK: return %[[R]]
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
// S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T q_t.
func.func @delta(%g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %k: tensor<2x4x2xf32>, %v: tensor<2x4x3xf32>, %q: tensor<2x4x2xf32>) -> tensor<2x4x3xf32> {
  %A = tang.comprehension (%p, %t, %i, %j) [2, 4, 2, 2] : tensor<2x4x2x2xf32> {
    %gt = tang.read %g[%p, %t] : tensor<2x4xf32>
    %bt = tang.read %beta[%p, %t] : tensor<2x4xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x4x2xf32>
    %kj = tang.read %k[%p, %t, %j] : tensor<2x4x2xf32>
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
  %B = tang.comprehension (%p, %t, %i, %j) [2, 4, 2, 3] : tensor<2x4x2x3xf32> {
    %bt = tang.read %beta[%p, %t] : tensor<2x4xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x4x2xf32>
    %vj = tang.read %v[%p, %t, %j] : tensor<2x4x3xf32>
    %bk = arith.mulf %bt, %ki : f32
    %b = arith.mulf %bk, %vj : f32
    tang.yield %b : f32
  }
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<2x4x2x2xf32>, tensor<2x4x2x3xf32>) -> tensor<2x4x2x2xf32>, tensor<2x4x2x3xf32>
  %o = tang.comprehension (%p, %t, %j) reduce (%i) [2, 4, 3, 2] monoid(add) : tensor<2x4x3xf32> {
    %s = tang.read %S[%p, %t, %i, %j] : tensor<2x4x2x3xf32>
    %x = tang.read %q[%p, %t, %i] : tensor<2x4x2xf32>
    %m = arith.mulf %s, %x : f32
    tang.yield %m : f32
  }
  return %o : tensor<2x4x3xf32>
}

// BAD-CHUNK: error: tang-chunk-affine-scan: chunk=3 does not divide the scan's 4 steps

// -----

// Two readers: o[t, j, p] = sum_i S[p, t, i, j] q[p, t, i] (indices in
// another order) is reassociated; r[p, t, j] = sum_i S[p, t, i, j] q[p, t, j]
// (the vector varies along the column) reads each step's state.
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
// CHECK-LABEL: func.func @readers
// CHECK: %[[SC:.*]]:2 = tang.tensor_scan @affine({{.*}}) {tang.chunked}
// CHECK: %[[S:.*]] = tang.comprehension ({{.*}}) [2, 4, 2, 3] : tensor<2x4x2x3xf32> {
// CHECK: %[[O:.*]] = tang.comprehension ({{.*}}) [2, 4, 3] : tensor<2x4x3xf32> {
// CHECK: %[[T:.*]] = tang.comprehension ({{.*}}) [4, 3, 2] : tensor<4x3x2xf32> {
// CHECK-NEXT: tang.read %[[O]][%p2, %p0, %p1]
// CHECK: tang.comprehension ({{.*}}) reduce ({{.*}}) [2, 4, 3, 2] monoid(add) : tensor<2x4x3xf32> {
// CHECK-NEXT: tang.read %[[S]]
// The final state (the last step's) is the last chunk's.
// CHECK: %[[F:.*]] = tang.comprehension ({{.*}}) [2, 2, 3] : tensor<2x2x3xf32> {
// CHECK-NEXT: tang.read %[[SC]]#1[%p0, 1, %p1, %p2]
// CHECK: return %[[T]], %{{.*}}, %[[F]]
func.func @readers(%g: tensor<2x4xf32>, %k: tensor<2x4x2xf32>, %v: tensor<2x4x3xf32>, %q: tensor<2x4x2xf32>, %q3: tensor<2x4x3xf32>) -> (tensor<4x3x2xf32>, tensor<2x4x3xf32>, tensor<2x2x3xf32>) {
  %A = tang.comprehension (%p, %t, %i, %j) [2, 4, 2, 2] : tensor<2x4x2x2xf32> {
    %gt = tang.read %g[%p, %t] : tensor<2x4xf32>
    %ki = tang.read %k[%p, %t, %i] : tensor<2x4x2xf32>
    %kj = tang.read %k[%p, %t, %j] : tensor<2x4x2xf32>
    %alpha = math.exp %gt : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %eq = arith.cmpi eq, %ii, %jj : i32
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %id = arith.select %eq, %one, %zero : f32
    %kk = arith.mulf %ki, %kj : f32
    %d = arith.subf %id, %kk : f32
    %a = arith.mulf %alpha, %d : f32
    tang.yield %a : f32
  }
  %B = tang.comprehension (%p, %t, %i, %j) [2, 4, 2, 3] : tensor<2x4x2x3xf32> {
    %ki = tang.read %k[%p, %t, %i] : tensor<2x4x2xf32>
    %vj = tang.read %v[%p, %t, %j] : tensor<2x4x3xf32>
    %b = arith.mulf %ki, %vj : f32
    tang.yield %b : f32
  }
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<2x4x2x2xf32>, tensor<2x4x2x3xf32>) -> tensor<2x4x2x2xf32>, tensor<2x4x2x3xf32>
  %o = tang.comprehension (%t, %j, %p) reduce (%i) [4, 3, 2, 2] monoid(add) : tensor<4x3x2xf32> {
    %x = tang.read %q[%p, %t, %i] : tensor<2x4x2xf32>
    %s = tang.read %S[%p, %t, %i, %j] : tensor<2x4x2x3xf32>
    %m = arith.mulf %x, %s : f32
    tang.yield %m : f32
  }
  %r = tang.comprehension (%p, %t, %j) reduce (%i) [2, 4, 3, 2] monoid(add) : tensor<2x4x3xf32> {
    %s = tang.read %S[%p, %t, %i, %j] : tensor<2x4x2x3xf32>
    %x = tang.read %q3[%p, %t, %j] : tensor<2x4x3xf32>
    %m = arith.mulf %s, %x : f32
    tang.yield %m : f32
  }
  %f = tang.comprehension (%p, %i, %j) [2, 2, 3] : tensor<2x2x3xf32> {
    %s = tang.read %S[%p, 3, %i, %j] : tensor<2x4x2x3xf32>
    tang.yield %s : f32
  }
  return %o, %r, %f : tensor<4x3x2xf32>, tensor<2x4x3xf32>, tensor<2x2x3xf32>
}

// -----

// A transition with a rank-two update, the products of the transitions
// used, elements that are arguments: left as they are, with a remark.
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
func.func @rank_two(%g: tensor<4xf32>, %k: tensor<4x2xf32>, %B: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  %A = tang.comprehension (%t, %i, %j) [4, 2, 2] : tensor<4x2x2xf32> {
    %ki = tang.read %k[%t, %i] : tensor<4x2xf32>
    %kj = tang.read %k[%t, %j] : tensor<4x2xf32>
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %eq = arith.cmpi eq, %ii, %jj : i32
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %id = arith.select %eq, %one, %zero : f32
    %kk = arith.mulf %ki, %kj : f32
    %k2 = arith.mulf %kk, %kk : f32
    %d = arith.subf %id, %kk : f32
    %a = arith.addf %d, %k2 : f32
    tang.yield %a : f32
  }
  // expected-remark @+1 {{tang-chunk-affine-scan: not chunked: the transition's update has rank 2 (rank one is chunked)}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<4x2x2xf32>, tensor<4x2x3xf32>) -> tensor<4x2x2xf32>, tensor<4x2x3xf32>
  return %S : tensor<4x2x3xf32>
}

func.func @products_used(%A: tensor<4x2x2xf32>, %B: tensor<4x2x3xf32>) -> tensor<4x2x2xf32> {
  // expected-remark @+1 {{tang-chunk-affine-scan: not chunked: the products of the transitions are used (only the states are kept)}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<4x2x2xf32>, tensor<4x2x3xf32>) -> tensor<4x2x2xf32>, tensor<4x2x3xf32>
  return %PA : tensor<4x2x2xf32>
}

func.func @arguments(%A: tensor<4x2x2xf32>, %B: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-remark @+1 {{tang-chunk-affine-scan: not chunked: its transitions are not a map comprehension}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<4x2x2xf32>, tensor<4x2x3xf32>) -> tensor<4x2x2xf32>, tensor<4x2x3xf32>
  return %S : tensor<4x2x3xf32>
}

func.func @diagonal_varies(%g: tensor<4x2xf32>, %B: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  %A = tang.comprehension (%t, %i, %j) [4, 2, 2] : tensor<4x2x2xf32> {
    %gi = tang.read %g[%t, %i] : tensor<4x2xf32>
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %eq = arith.cmpi eq, %ii, %jj : i32
    %zero = arith.constant 0.0 : f32
    %a = arith.select %eq, %gi, %zero : f32
    tang.yield %a : f32
  }
  // expected-remark @+1 {{tang-chunk-affine-scan: not chunked: the transition is not d I + u w^T: its diagonal varies along the row}}
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<4x2x2xf32>, tensor<4x2x3xf32>) -> tensor<4x2x2xf32>, tensor<4x2x3xf32>
  return %S : tensor<4x2x3xf32>
}

// -----

// A monoid that is not the composition (the products in the other order)
// is not this pass's: no remark, nothing changes.
// CHECK-LABEL: func.func @other_order
// CHECK: tang.tensor_scan @reversed
tang.monoid @reversed : [tensor<2x2xf32>] identity [] {
^bb0(%a1: tensor<2x2xf32>, %a2: tensor<2x2xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [2, 2, 2] monoid(add) : tensor<2x2xf32> {
    %x = tang.read %a1[%i, %k] : tensor<2x2xf32>
    %y = tang.read %a2[%k, %j] : tensor<2x2xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  tang.yield %a : tensor<2x2xf32>
}
func.func @other_order(%A: tensor<4x2x2xf32>) -> tensor<4x2x2xf32> {
  %P = tang.tensor_scan @reversed(%A : tensor<4x2x2xf32>) -> tensor<4x2x2xf32>
  return %P : tensor<4x2x2xf32>
}
