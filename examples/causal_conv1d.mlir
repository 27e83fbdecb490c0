// A depthwise causal convolution over time (the short convolution in front
// of Mamba's and gated-delta-net's mixers), then its bias and SiLU:
//
//   y[b, t, c] = silu(bias[c] + sum_{k < 4} w[c, k] * x[b, t + k - 3, c])
//
// Causal: output t sees inputs t-3 .. t, and the window's first three
// positions fall before the sequence at its start. The read of x declares
// that those read 0 (`fill(0.0)`: zero padding) instead of wrapping the
// coordinate by hand. x: 2x256x64 (batch, time, channels), w: 64x4, bias: 64.
func.func @main(%x: tensor<2x256x64xf32>, %w: tensor<64x4xf32>,
                %bias: tensor<64xf32>) -> tensor<2x256x64xf32> {
  %conv = tang.comprehension (%b, %t, %c) reduce (%k) [2, 256, 64, 4] monoid(add) : tensor<2x256x64xf32> {
    %xv = tang.read %x[%b, %t + %k - 3, %c] fill(0.0) : tensor<2x256x64xf32>
    %wv = tang.read %w[%c, %k] : tensor<64x4xf32>
    %p = arith.mulf %wv, %xv : f32
    tang.yield %p : f32
  }
  %y = tang.comprehension (%b, %t, %c) [2, 256, 64] : tensor<2x256x64xf32> {
    %v = tang.read %conv[%b, %t, %c] : tensor<2x256x64xf32>
    %bv = tang.read %bias[%c] : tensor<64xf32>
    %s = arith.addf %v, %bv : f32
    %one = arith.constant 1.0 : f32
    %n = arith.negf %s : f32
    %e = math.exp %n : f32
    %den = arith.addf %one, %e : f32
    %o = arith.divf %s, %den : f32
    tang.yield %o : f32
  }
  return %y : tensor<2x256x64xf32>
}
