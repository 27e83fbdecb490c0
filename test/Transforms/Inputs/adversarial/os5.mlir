// innerMax = max_k (X[i,k] + Y[j]) depends on j; Equivalence accepts it as "max of s" because Y[j] == Y[j] short-circuits the j->k mapping.
func.func @main(%X: tensor<2x8xf32>, %Y: tensor<8xf32>, %V: tensor<8xf32>) -> tensor<2xf32> {
  %O = tang.comprehension (%i) reduce (%j) [2, 8] monoid(add) : tensor<2xf32> {
    %m = tang.comprehension reduce (%k) [8] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %y = tang.read %Y[%k] : tensor<8xf32>
      %s = arith.addf %x, %y : f32
      tang.yield %s : f32
    }
    %mj = tang.comprehension reduce (%k) [8] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %y = tang.read %Y[%j] : tensor<8xf32>
      %s = arith.addf %x, %y : f32
      tang.yield %s : f32
    }
    %l = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %y = tang.read %Y[%k] : tensor<8xf32>
      %s = arith.addf %x, %y : f32
      %d = arith.subf %s, %mj : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %x = tang.read %X[%i, %j] : tensor<2x8xf32>
    %y = tang.read %Y[%j] : tensor<8xf32>
    %s = arith.addf %x, %y : f32
    %d = arith.subf %s, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %l : f32
    %v = tang.read %V[%j] : tensor<8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2xf32>
}
