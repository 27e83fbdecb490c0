// lse over 16 columns written with the max of only the first 4: m + log(sum_{k<16} exp(x - m)) is exact for any m.
func.func @main(%X: tensor<4x16xf32>) -> tensor<4xf32> {
  %lse = tang.comprehension (%i) [4] : tensor<4xf32> {
    %m = tang.comprehension reduce (%k) [4] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      tang.yield %x : f32
    }
    %l = tang.comprehension reduce (%k) [16] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x16xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %g = math.log %l : f32
    %s = arith.addf %m, %g : f32
    tang.yield %s : f32
  }
  return %lse : tensor<4xf32>
}
