// RUN: not tang-run %s --check-monoid-laws 2>&1 | FileCheck %s

// User monoids that break the laws they declare: each violated law is
// reported once, with a counterexample, at the tang.monoid; tang-run exits 1.
// The builtins come first and are all ok.
// CHECK: monoid online_softmax (f64, f64, f64): associative, identity, commutative: ok

// Subtraction breaks every law: a - (b - c) != (a - b) - c, 0 - a != a,
// a - b != b - a.
// CHECK:      monoid-laws-violations.mlir:[[# @LINE + 5]]:1: error: monoid @sub is not associative: combine(combine(a, b), c) != combine(a, combine(b, c)) for a = ({{.*}}), b = ({{.*}}), c = ({{.*}}): ({{.*}}) vs ({{.*}})
// CHECK-NEXT: tang.monoid @sub
// CHECK:      monoid-laws-violations.mlir:[[# @LINE + 3]]:1: error: monoid @sub has identity e = (0) but combine(e, a) != a for a = ({{.*}}): (-{{.*}})
// CHECK:      monoid-laws-violations.mlir:[[# @LINE + 2]]:1: error: monoid @sub is declared commutative but combine(a, b) != combine(b, a) for a = ({{.*}}), b = ({{.*}}): ({{.*}}) vs ({{.*}})
// CHECK:      monoid @sub (f64): associative: violated, identity: violated, commutative: violated (1000 samples)
tang.monoid @sub : [f64] identity [0.0 : f64] commutative {
^bb0(%a: f64, %b: f64):
  %d = arith.subf %a, %b : f64
  tang.yield %d : f64
}

// The mean of two is commutative, but not associative, and has no identity:
// (a + 0) / 2 != a.
// CHECK:      :[[# @LINE + 4]]:1: error: monoid @mean2 is not associative: combine(combine(a, b), c) != combine(a, combine(b, c))
// CHECK:      :[[# @LINE + 3]]:1: error: monoid @mean2 has identity e = (0) but combine(e, a) != a
// CHECK-NOT:  error: monoid @mean2 is declared commutative
// CHECK:      monoid @mean2 (f64): associative: violated, identity: violated, commutative: ok (1000 samples)
tang.monoid @mean2 : [f64] identity [0.0 : f64] commutative {
^bb0(%a: f64, %b: f64):
  %s = arith.addf %a, %b : f64
  %half = arith.constant 0.5 : f64
  %m = arith.mulf %s, %half : f64
  tang.yield %m : f64
}

// Addition with the wrong identity: only the identity law fails.
// CHECK-NOT:  error: monoid @add_one is not associative
// CHECK:      :[[# @LINE + 3]]:1: error: monoid @add_one has identity e = (1) but combine(e, a) != a for a = ({{.*}}): ({{.*}})
// CHECK-NOT:  error: monoid @add_one is declared commutative
// CHECK:      monoid @add_one (f64): associative: ok, identity: violated, commutative: ok (1000 samples)
tang.monoid @add_one : [f64] identity [1.0 : f64] commutative {
^bb0(%a: f64, %b: f64):
  %s = arith.addf %a, %b : f64
  tang.yield %s : f64
}

// Integer subtraction, not declared commutative: compared exactly, the
// counterexamples are integers; commutativity is not checked.
// CHECK:      :[[# @LINE + 4]]:1: error: monoid @isub is not associative: combine(combine(a, b), c) != combine(a, combine(b, c)) for a = ({{[0-9]+}}), b = ({{[0-9]+}}), c = ({{[0-9]+}}): ({{-?[0-9]+}}) vs ({{-?[0-9]+}})
// CHECK:      :[[# @LINE + 3]]:1: error: monoid @isub has identity e = (0) but combine(e, a) != a for a = ({{[0-9]+}}): (-{{[0-9]+}})
// CHECK-NOT:  error: monoid @isub is declared commutative
// CHECK:      monoid @isub (i32): associative: violated, identity: violated (1000 samples)
tang.monoid @isub : [i32] identity [0 : i32] {
^bb0(%a: i32, %b: i32):
  %d = arith.subi %a, %b : i32
  tang.yield %d : i32
}

// 2x2 matrix product: associative with identity (1, 0, 0, 1), not
// commutative. Not declared commutative: ok.
// CHECK-NOT:  error: monoid @matmul2
// CHECK:      monoid @matmul2 (f64, f64, f64, f64): associative, identity: ok (1000 samples)
tang.monoid @matmul2 : [f64, f64, f64, f64]
    identity [1.0 : f64, 0.0 : f64, 0.0 : f64, 1.0 : f64] {
^bb0(%a1: f64, %b1: f64, %c1: f64, %d1: f64,
     %a2: f64, %b2: f64, %c2: f64, %d2: f64):
  %aa = arith.mulf %a1, %a2 : f64
  %bc = arith.mulf %b1, %c2 : f64
  %a = arith.addf %aa, %bc : f64
  %ab = arith.mulf %a1, %b2 : f64
  %bd = arith.mulf %b1, %d2 : f64
  %b = arith.addf %ab, %bd : f64
  %ca = arith.mulf %c1, %a2 : f64
  %dc = arith.mulf %d1, %c2 : f64
  %c = arith.addf %ca, %dc : f64
  %cb = arith.mulf %c1, %b2 : f64
  %dd = arith.mulf %d1, %d2 : f64
  %d = arith.addf %cb, %dd : f64
  tang.yield %a, %b, %c, %d : f64, f64, f64, f64
}

// The same product declared commutative: AB != BA.
// CHECK-NOT:  error: monoid @matmul2_commutative is not associative
// CHECK:      :[[# @LINE + 3]]:1: error: monoid @matmul2_commutative is declared commutative but combine(a, b) != combine(b, a) for a = ({{.*}}, {{.*}}, {{.*}}, {{.*}}), b = ({{.*}}, {{.*}}, {{.*}}, {{.*}}): ({{.*}}) vs ({{.*}})
// CHECK:      monoid @matmul2_commutative (f64, f64, f64, f64): associative: ok, identity: ok, commutative: violated (1000 samples)
// CHECK-NOT:  monoid
tang.monoid @matmul2_commutative : [f64, f64, f64, f64]
    identity [1.0 : f64, 0.0 : f64, 0.0 : f64, 1.0 : f64] commutative {
^bb0(%a1: f64, %b1: f64, %c1: f64, %d1: f64,
     %a2: f64, %b2: f64, %c2: f64, %d2: f64):
  %aa = arith.mulf %a1, %a2 : f64
  %bc = arith.mulf %b1, %c2 : f64
  %a = arith.addf %aa, %bc : f64
  %ab = arith.mulf %a1, %b2 : f64
  %bd = arith.mulf %b1, %d2 : f64
  %b = arith.addf %ab, %bd : f64
  %ca = arith.mulf %c1, %a2 : f64
  %dc = arith.mulf %d1, %c2 : f64
  %c = arith.addf %ca, %dc : f64
  %cb = arith.mulf %c1, %b2 : f64
  %dd = arith.mulf %d1, %d2 : f64
  %d = arith.addf %cb, %dd : f64
  tang.yield %a, %b, %c, %d : f64, f64, f64, f64
}
