// RUN: tang-run %s --check-monoid-laws | FileCheck %s
// RUN: tang-run %s --check-monoid-laws --seed 7 --law-samples=5000 | FileCheck %s --check-prefix=SEED

// Every builtin monoid satisfies its laws: on f64 and, where it takes
// integers, on i32 and i1 carriers (argmax/argmin: the value's type, i32
// indices). Wrapping integer addition and multiplication are exact.
// CHECK:      monoid add (f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid add (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid add (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid mul (f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid mul (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid mul (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid max (f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid max (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid max (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid min (f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid min (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid min (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid and (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid and (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid or (i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid or (i1): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmax (f64, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmax (i32, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmax (i1, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmin (f64, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmin (i32, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid argmin (i1, i32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid softmax_norm (f64, f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid online_softmax (f64, f64, f64): associative, identity, commutative: ok (1000 samples)

// Then the program's monoids, in order.
// CHECK-NEXT: monoid @welford (f64, f64, f64): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid @count_max (i32, f32): associative, identity, commutative: ok (1000 samples)
// CHECK-NEXT: monoid @matmul2 (f64, f64, f64, f64): associative, identity: ok (1000 samples)
// CHECK-NOT:  monoid

// Another seed and sample count: still all ok.
// SEED-COUNT-27: : ok (5000 samples)
// SEED-NOT:      monoid

// Welford's running (count, mean, M2): n = n1 + n2, delta = m2 - m1,
// mean = m1 + delta n2 / n, M2 = M2a + M2b + delta^2 n1 n2 / n.
tang.monoid @welford : [f64, f64, f64]
    identity [0.0 : f64, 0.0 : f64, 0.0 : f64] commutative {
^bb0(%n1: f64, %m1: f64, %s1: f64, %n2: f64, %m2: f64, %s2: f64):
  %n = arith.addf %n1, %n2 : f64
  %delta = arith.subf %m2, %m1 : f64
  %w = arith.divf %n2, %n : f64
  %dw = arith.mulf %delta, %w : f64
  %m = arith.addf %m1, %dw : f64
  %s12 = arith.addf %s1, %s2 : f64
  %d2 = arith.mulf %delta, %delta : f64
  %nn = arith.mulf %n1, %n2 : f64
  %nnn = arith.divf %nn, %n : f64
  %corr = arith.mulf %d2, %nnn : f64
  %s = arith.addf %s12, %corr : f64
  tang.yield %n, %m, %s : f64, f64, f64
}

// An integer count (compared exactly) beside a float maximum.
tang.monoid @count_max : [i32, f32] identity [0 : i32, 0xFF800000 : f32] commutative {
^bb0(%c1: i32, %x1: f32, %c2: i32, %x2: f32):
  %c = arith.addi %c1, %c2 : i32
  %x = arith.maximumf %x1, %x2 : f32
  tang.yield %c, %x : i32, f32
}

// 2x2 matrix product, row-major (a, b, c, d): associative, with identity
// (1, 0, 0, 1), but not commutative, and not declared so: only associativity
// and identity are checked.
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
