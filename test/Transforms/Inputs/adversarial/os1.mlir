// O[i] = sum_{j<8} exp(X[i,j] - max_{k<4} X[i,k]) / (sum_{k<4} exp(X[i,k] - max_{k<4} X[i,k])) * V[j]
func.func @main(%X: tensor<2x8xf32>, %V: tensor<8xf32>) -> tensor<2xf32> {
  %O = tang.comprehension (%i) reduce (%j) [2, 8] monoid(add) : tensor<2xf32> {
    %m = tang.comprehension reduce (%k) [4] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      tang.yield %x : f32
    }
    %m2 = tang.comprehension reduce (%k) [4] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      tang.yield %x : f32
    }
    %l = tang.comprehension reduce (%k) [4] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %d = arith.subf %x, %m2 : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %s = tang.read %X[%i, %j] : tensor<2x8xf32>
    %d = arith.subf %s, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %l : f32
    %v = tang.read %V[%j] : tensor<8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2xf32>
}
