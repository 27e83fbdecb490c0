// t = Y[j] is added to every score inside the max and sum (it cancels),
// so O = sum_j softmax_j(X[i,:]) * V[j]; online softmax uses X[i,j]+Y[j] as the score.
func.func @main(%X: tensor<2x8xf32>, %Y: tensor<8xf32>, %V: tensor<8xf32>) -> tensor<2xf32> {
  %O = tang.comprehension (%i) reduce (%j) [2, 8] monoid(add) : tensor<2xf32> {
    %t = tang.read %Y[%j] : tensor<8xf32>
    %m = tang.comprehension reduce (%k) [8] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %y = arith.addf %x, %t : f32
      tang.yield %y : f32
    }
    %l = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x8xf32>
      %y = arith.addf %x, %t : f32
      %d = arith.subf %y, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %s0 = tang.read %X[%i, %j] : tensor<2x8xf32>
    %s = arith.addf %s0, %t : f32
    %d = arith.subf %s, %m : f32
    %e = math.exp %d : f32
    %p = arith.divf %e, %l : f32
    %v = tang.read %V[%j] : tensor<8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2xf32>
}
