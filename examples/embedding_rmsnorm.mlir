// A language model's first step: look up each token's row of the embedding
// table, then RMSNorm it:
//
//   x[b, t, :] = E[tokens[b, t], :]
//   y[b, t, d] = x[b, t, d] / sqrt(mean_d x[b, t, d]^2 + 1e-6) * w[d]
//
// The lookup is a gather: its row coordinate is data (the token, cast to an
// index). `clamp` reads the first or last row for a token outside the
// table; the default policy, `trap`, fails the run naming the token
// instead, and runs in the interpreter only until kernels have an error
// channel. tokens: 2x64 (i32), E: 1000x64, w: 64.
func.func @main(%tokens: tensor<2x64xi32>, %E: tensor<1000x64xf32>,
                %w: tensor<64xf32>) -> tensor<2x64x64xf32> {
  %x = tang.comprehension (%b, %t, %d) [2, 64, 64] : tensor<2x64x64xf32> {
    %tok = tang.read %tokens[%b, %t] : tensor<2x64xi32>
    %row = arith.index_cast %tok : i32 to index
    %e = tang.gather %E[symbol(%row), %d] clamp : tensor<1000x64xf32>
    tang.yield %e : f32
  }
  %ss = tang.comprehension (%b, %t) reduce (%d) [2, 64, 64] monoid(add) : tensor<2x64xf32> {
    %v = tang.read %x[%b, %t, %d] : tensor<2x64x64xf32>
    %s = arith.mulf %v, %v : f32
    tang.yield %s : f32
  }
  %y = tang.comprehension (%b, %t, %d) [2, 64, 64] : tensor<2x64x64xf32> {
    %v = tang.read %x[%b, %t, %d] : tensor<2x64x64xf32>
    %s = tang.read %ss[%b, %t] : tensor<2x64xf32>
    %g = tang.read %w[%d] : tensor<64xf32>
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %m = arith.divf %s, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %vr = arith.mulf %v, %r : f32
    %o = arith.mulf %vr, %g : f32
    tang.yield %o : f32
  }
  return %y : tensor<2x64x64xf32>
}
