// 2-D convolution (cross-correlation, as in deep learning), stride 1, no
// padding, through a sliding-window view:
//
//   Win[n, c, oh, ow, r, s] = X[n, c, oh + r, ow + s]        (a view)
//   Y[n, k, oh, ow] = sum_{c, r, s} Win[n, c, oh, ow, r, s] * F[k, c, r, s]
//
//   X: 2x3x10x10 (N, C, H, W); F: 4x3x3x3 (K, C, R, S); Y: 2x4x8x8
func.func @main(%X: tensor<2x3x10x10xf32>, %F: tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // The 3x3 windows of every output pixel; nothing is copied.
  %Win = tang.view %X by affine_map<(n, c, oh, ow, r, s) -> (n, c, oh + r, ow + s)> : tensor<2x3x10x10xf32> to tensor<2x3x8x8x3x3xf32>
  %Y = tang.comprehension (%n, %k, %oh, %ow) reduce (%c, %r, %s) [2, 4, 8, 8, 3, 3, 3] monoid(add) : tensor<2x4x8x8xf32> {
    %x = tang.read %Win[%n, %c, %oh, %ow, %r, %s] : tensor<2x3x8x8x3x3xf32>
    %f = tang.read %F[%k, %c, %r, %s] : tensor<4x3x3x3xf32>
    %p = arith.mulf %x, %f : f32
    tang.yield %p : f32
  }
  return %Y : tensor<2x4x8x8xf32>
}
