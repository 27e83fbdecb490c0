// A matrix-vector product per head (20 heads), each head its own matrix:
//
//   y[h, n] = sum_k W[h, n, k] * x[h, k]      W: 20x48x64, x: 20x64, y: 20x48
//
// More heads than a warp computes together: the CUDA pipeline runs a warp
// per output and a head per block row.
func.func @main(%W: tensor<20x48x64xf32>, %x: tensor<20x64xf32>) -> tensor<20x48xf32> {
  %y = tang.comprehension (%h, %n) reduce (%k) [20, 48, 64] monoid(add) : tensor<20x48xf32> {
    %w = tang.read %W[%h, %n, %k] : tensor<20x48x64xf32>
    %v = tang.read %x[%h, %k] : tensor<20x64xf32>
    %p = arith.mulf %w, %v : f32
    tang.yield %p : f32
  }
  return %y : tensor<20x48xf32>
}
