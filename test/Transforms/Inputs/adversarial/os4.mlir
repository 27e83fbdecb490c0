func.func @main(%X: tensor<4x16xf32>) -> tensor<4xf32> {
  %O = tang.comprehension (%i) [4] : tensor<4xf32> {
    %m0 = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      %z = tang.index %i : f32
      %s = arith.addf %x, %z : f32
      tang.yield %s : f32
    }
    %r = tang.comprehension reduce (%q) [2] monoid(add) : f32 {
      %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
        %x = tang.read %X[%i, %k] : tensor<4x16xf32>
        %z = tang.index %i : f32
        %s = arith.addf %x, %z : f32
        %d = arith.subf %s, %m0 : f32
        %e = math.exp %d : f32
        tang.yield %e : f32
      }
      %z2 = tang.index %i : f32
      %m1 = tang.comprehension reduce (%k) [16] monoid(max) : f32 {
        %x = tang.read %X[%i, %k] : tensor<4x16xf32>
        %s = arith.addf %x, %z2 : f32
        tang.yield %s : f32
      }
      %y = arith.addf %l, %m1 : f32
      tang.yield %y : f32
    }
    tang.yield %r : f32
  }
  return %O : tensor<4xf32>
}
