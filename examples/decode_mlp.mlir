// A decode step's SwiGLU MLP for a batch of 2 sequences, weights stored
// [out, in] as nn.Linear holds them, with the residual:
//
//   g[r, f] = sum_e Wg[f, e] x[r, e]          (gate)
//   u[r, f] = sum_e Wu[f, e] x[r, e]          (up)
//   a[r, f] = silu(g[r, f]) * u[r, f],   silu(g) = g / (1 + exp(-g))
//   y[r, e] = x[r, e] + sum_f Wd[e, f] a[r, f] (down, residual)
//
//   x, y: 2x256; Wg, Wu: 512x256; Wd: 256x512
//
// Fused, the gate, up and activation are one comprehension whose body holds
// two reductions over e, and the down product with its residual another:
// matrix-vector products that the CUDA pipeline runs a warp per output,
// both rows of the batch sharing each weight load.
func.func @main(%x: tensor<2x256xf32>, %Wg: tensor<512x256xf32>, %Wu: tensor<512x256xf32>, %Wd: tensor<256x512xf32>) -> tensor<2x256xf32> {
  %g = tang.comprehension (%r, %f) reduce (%e) [2, 512, 256] monoid(add) : tensor<2x512xf32> {
    %w = tang.read %Wg[%f, %e] : tensor<512x256xf32>
    %xv = tang.read %x[%r, %e] : tensor<2x256xf32>
    %p = arith.mulf %w, %xv : f32
    tang.yield %p : f32
  }
  %u = tang.comprehension (%r, %f) reduce (%e) [2, 512, 256] monoid(add) : tensor<2x512xf32> {
    %w = tang.read %Wu[%f, %e] : tensor<512x256xf32>
    %xv = tang.read %x[%r, %e] : tensor<2x256xf32>
    %p = arith.mulf %w, %xv : f32
    tang.yield %p : f32
  }
  %a = tang.comprehension (%r, %f) [2, 512] : tensor<2x512xf32> {
    %gv = tang.read %g[%r, %f] : tensor<2x512xf32>
    %uv = tang.read %u[%r, %f] : tensor<2x512xf32>
    %one = arith.constant 1.0 : f32
    %ng = arith.negf %gv : f32
    %e = math.exp %ng : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %gv, %d : f32
    %v = arith.mulf %s, %uv : f32
    tang.yield %v : f32
  }
  %y = tang.comprehension (%r, %e) [2, 256] : tensor<2x256xf32> {
    %xv = tang.read %x[%r, %e] : tensor<2x256xf32>
    %dn = tang.comprehension reduce (%f) [512] monoid(add) : f32 {
      %w = tang.read %Wd[%e, %f] : tensor<256x512xf32>
      %av = tang.read %a[%r, %f] : tensor<2x512xf32>
      %p = arith.mulf %w, %av : f32
      tang.yield %p : f32
    }
    %s = arith.addf %xv, %dn : f32
    tang.yield %s : f32
  }
  return %y : tensor<2x256xf32>
}
