// RUN: tang-run %s --print-values | FileCheck %s

// Edge cases of the builtin monoids, on constants so the values are exact.

// softmax_norm from a masked (-inf) element: row 0 m = 1, l = 1; row 1 m = 2, l = 1 + 2 exp(-1).
// CHECK: output #0  tensor<2xf32>
// CHECK: [1, 2]
// CHECK: output #1  tensor<2xf32>
// CHECK: [1, 1.73576]
// argmax ties keep the first index; argmin likewise.
// CHECK: output #2  tensor<2xf32>
// CHECK: [3, 5]
// CHECK: output #3  tensor<2xi32>
// CHECK: [1, 0]
// i8 addition wraps: 100 + 100 + 100 = 300 - 256 = 44; -100 * 3 = -300 + 256 = -44.
// CHECK: output #4  tensor<2xi8>
// CHECK: [44, -44]
// and / or over i1.
// CHECK: output #5  tensor<2xi1>
// CHECK: [0, 1]
// CHECK: output #6  tensor<2xi1>
// CHECK: [1, 1]
// online_softmax from a masked element: weights exp(0), exp(-1) of 10 and 20.
// CHECK: output #7  tensor<1xf32>
// CHECK: [12.6894]
func.func @main() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>, tensor<2xi1>, tensor<2xi1>, tensor<1xf32>) {
  %X = arith.constant dense<[[0xFF800000, 1.0, 0xFF800000], [1.0, 2.0, 1.0]]> : tensor<2x3xf32>
  %m, %l = tang.comprehension (%i) reduce (%k) [2, 3] monoid(softmax_norm) : tensor<2xf32>, tensor<2xf32> {
    %x = tang.read %X[%i, %k] : tensor<2x3xf32>
    tang.yield %x : f32
  }
  %T = arith.constant dense<[[1.0, 3.0, 3.0], [5.0, 2.0, 5.0]]> : tensor<2x3xf32>
  %v, %a = tang.comprehension (%i) reduce (%k) [2, 3] monoid(argmax) : tensor<2xf32>, tensor<2xi32> {
    %x = tang.read %T[%i, %k] : tensor<2x3xf32>
    %k32 = tang.index %k : i32
    tang.yield %x, %k32 : f32, i32
  }
  %B = arith.constant dense<[[100, 100, 100], [-100, -100, -100]]> : tensor<2x3xi8>
  %s = tang.comprehension (%i) reduce (%k) [2, 3] monoid(add) : tensor<2xi8> {
    %x = tang.read %B[%i, %k] : tensor<2x3xi8>
    tang.yield %x : i8
  }
  %F = arith.constant dense<[[true, false, true], [true, true, true]]> : tensor<2x3xi1>
  %all = tang.comprehension (%i) reduce (%k) [2, 3] monoid(and) : tensor<2xi1> {
    %x = tang.read %F[%i, %k] : tensor<2x3xi1>
    tang.yield %x : i1
  }
  %any = tang.comprehension (%i) reduce (%k) [2, 3] monoid(or) : tensor<2xi1> {
    %x = tang.read %F[%i, %k] : tensor<2x3xi1>
    tang.yield %x : i1
  }
  %S = arith.constant dense<[0xFF800000, 2.0, 1.0]> : tensor<3xf32>
  %V = arith.constant dense<[99.0, 10.0, 20.0]> : tensor<3xf32>
  %o = tang.comprehension (%i) reduce (%k) [1, 3] monoid(online_softmax) : tensor<1xf32> {
    %sc = tang.read %S[%k] : tensor<3xf32>
    %va = tang.read %V[%k] : tensor<3xf32>
    tang.yield %sc, %va : f32, f32
  }
  return %m, %l, %v, %a, %s, %all, %any, %o : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>, tensor<2xi1>, tensor<2xi1>, tensor<1xf32>
}
