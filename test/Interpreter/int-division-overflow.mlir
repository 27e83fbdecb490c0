// RUN: tang-run %s --print-values | FileCheck %s
// INT64_MIN / -1 overflows: the interpreter wraps (no trap), like the
// hardware it models; the truncated result is 0.
// CHECK: [0, 0, 0, 0]
func.func @main(%X: tensor<4xi32>) -> tensor<4xi32> {
  %C = tang.comprehension (%i) [4] : tensor<4xi32> {
    %x = tang.read %X[%i] : tensor<4xi32>
    %w = arith.extsi %x : i32 to i64
    %m = arith.constant -9223372036854775808 : i64
    %n = arith.constant -1 : i64
    %a = arith.addi %m, %w : i64
    %q = arith.divsi %m, %n : i64
    %r = arith.trunci %q : i64 to i32
    tang.yield %r : i32
  }
  return %C : tensor<4xi32>
}
