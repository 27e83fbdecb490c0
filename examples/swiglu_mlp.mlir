// SwiGLU feed-forward block:
//
//   A[i, f] = sum_e x[i, e] * W1[e, f]          (gate)
//   B[i, f] = sum_e x[i, e] * W3[e, f]          (up)
//   G[i, f] = silu(A[i, f]) * B[i, f],   silu(a) = a / (1 + exp(-a))
//   y[i, e] = sum_f G[i, f] * W2[f, e]          (down)
//
//   x, y: 16x32; W1, W3: 32x64; W2: 64x32
func.func @main(%x: tensor<16x32xf32>, %W1: tensor<32x64xf32>, %W3: tensor<32x64xf32>, %W2: tensor<64x32xf32>) -> tensor<16x32xf32> {
  // A = x W1
  %A = tang.comprehension (%i, %f) reduce (%e) [16, 64, 32] monoid(add) : tensor<16x64xf32> {
    %xv = tang.read %x[%i, %e] : tensor<16x32xf32>
    %w = tang.read %W1[%e, %f] : tensor<32x64xf32>
    %p = arith.mulf %xv, %w : f32
    tang.yield %p : f32
  }
  // B = x W3
  %B = tang.comprehension (%i, %f) reduce (%e) [16, 64, 32] monoid(add) : tensor<16x64xf32> {
    %xv = tang.read %x[%i, %e] : tensor<16x32xf32>
    %w = tang.read %W3[%e, %f] : tensor<32x64xf32>
    %p = arith.mulf %xv, %w : f32
    tang.yield %p : f32
  }
  // G = silu(A) * B
  %G = tang.comprehension (%i, %f) [16, 64] : tensor<16x64xf32> {
    %a = tang.read %A[%i, %f] : tensor<16x64xf32>
    %bv = tang.read %B[%i, %f] : tensor<16x64xf32>
    %one = arith.constant 1.0 : f32
    %na = arith.negf %a : f32
    %ena = math.exp %na : f32
    %den = arith.addf %one, %ena : f32
    %silu = arith.divf %a, %den : f32
    %g = arith.mulf %silu, %bv : f32
    tang.yield %g : f32
  }
  // y = G W2
  %y = tang.comprehension (%i, %e) reduce (%f) [16, 32, 64] monoid(add) : tensor<16x32xf32> {
    %g = tang.read %G[%i, %f] : tensor<16x64xf32>
    %w = tang.read %W2[%f, %e] : tensor<64x32xf32>
    %p = arith.mulf %g, %w : f32
    tang.yield %p : f32
  }
  return %y : tensor<16x32xf32>
}
