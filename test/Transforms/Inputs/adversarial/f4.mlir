tang.monoid @welford : [f64, f64, f64] identity [0.0 : f64, 0.0 : f64, 0.0 : f64] commutative {
^bb0(%n1: f64, %m1: f64, %s1: f64, %n2: f64, %m2: f64, %s2: f64):
  %n = arith.addf %n1, %n2 : f64
  %d = arith.subf %m2, %m1 : f64
  %w = arith.divf %n2, %n : f64
  %dm = arith.mulf %d, %w : f64
  %m = arith.addf %m1, %dm : f64
  %dd = arith.mulf %d, %d : f64
  %a = arith.mulf %n1, %w : f64
  %b = arith.mulf %dd, %a : f64
  %s12 = arith.addf %s1, %s2 : f64
  %s = arith.addf %s12, %b : f64
  tang.yield %n, %m, %s : f64, f64, f64
}
func.func @main(%X: tensor<4x8xf64>, %W: tensor<8x3xf64>) -> (tensor<4x3xf64>, tensor<4xi32>) {
  %n, %mu, %m2 = tang.comprehension (%i) reduce (%k) [4, 8] monoid(@welford) : tensor<4xf64>, tensor<4xf64>, tensor<4xf64> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf64>
    %one = arith.constant 1.0 : f64
    %z = arith.constant 0.0 : f64
    tang.yield %one, %x, %z : f64, f64, f64
  }
  %mx, %am = tang.comprehension (%i) reduce (%k) [4, 8] monoid(argmax) : tensor<4xf64>, tensor<4xi32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf64>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f64, i32
  }
  %H = tang.comprehension (%i, %c) reduce (%k) [4, 3, 8] monoid(add) : tensor<4x3xf64> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf64>
    %w = tang.read %W[%k, %c] : tensor<8x3xf64>
    %mm = tang.read %mu[%i] : tensor<4xf64>
    %vv = tang.read %m2[%i] : tensor<4xf64>
    %nn = tang.read %n[%i] : tensor<4xf64>
    %mxx = tang.read %mx[%i] : tensor<4xf64>
    %d = arith.subf %x, %mm : f64
    %var = arith.divf %vv, %nn : f64
    %e = arith.addf %var, %mxx : f64
    %q = arith.mulf %d, %e : f64
    %p = arith.mulf %q, %w : f64
    tang.yield %p : f64
  }
  %A = tang.comprehension (%i) [4] : tensor<4xi32> {
    %a = tang.read %am[%i] : tensor<4xi32>
    %h = tang.read %H[%i, 2] : tensor<4x3xf64>
    %hi = arith.fptosi %h : f64 to i32
    %s = arith.addi %a, %hi : i32
    tang.yield %s : i32
  }
  return %H, %A : tensor<4x3xf64>, tensor<4xi32>
}
