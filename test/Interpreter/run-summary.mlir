// RUN: tang-run %s | FileCheck %s
// RUN: tang-run %s --print-values | FileCheck %s --check-prefix=ALL
// RUN: tang-opt %s --canonicalize | tang-run - | FileCheck %s

// An iota: the summary is exact, so it can be checked.
// CHECK: tang-run: @main, 0 input(s) random (seed 0), 2 output(s), float64
// CHECK: output #0  tensor<8xf32>
// CHECK-NEXT: min 0  max 7  mean 3.5
// CHECK-NEXT: [0, 1, 2, 3, 4, 5, ...]
// CHECK: output #1  tensor<i32>
// CHECK-NEXT: min 28  max 28
// ALL: [0, 1, 2, 3, 4, 5, 6, 7]
func.func @main() -> (tensor<8xf32>, tensor<i32>) {
  %iota = tang.comprehension (%i) [8] : tensor<8xf32> {
    %v = tang.index %i : f32
    tang.yield %v : f32
  }
  %sum = tang.comprehension reduce (%k) [8] monoid(add) : tensor<i32> {
    %v = tang.index %k : i32
    tang.yield %v : i32
  }
  return %iota, %sum : tensor<8xf32>, tensor<i32>
}
