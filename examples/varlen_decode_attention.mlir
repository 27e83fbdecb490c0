// Decode attention for a batch of sequences of different lengths
// (continuous batching): sequence b's new query attends over positions
// 0..pos[b] of its own key/value cache, pos read from a tensor. 8 query
// heads share 2 key/value heads (head dimension 64), the caches hold 128
// positions, and %n bounds every sequence's keys (the longest):
//
//   s[b, h, j] = q[b, h, :] . K[b, h / 4, j, :] / 8    (j <= pos[b], else -inf)
//   o[b, h, :] = sum_j softmax_j(s[b, h, j]) V'[b, h / 4, j, :]
//   V'[b, g, j, :] = V[b, g, j, :] where j <= pos[b], else 0
//
// (a position below 0 counts as 0: every sequence has a key). The value's
// mask makes a masked key contribute exactly nothing, whatever its cache
// row holds (0 x NaN would be NaN): so kernels may skip the keys past each
// sequence's position, and do -- the CUDA flash-decoding kernels end each
// block's run of keys there and never read them (SplitSoftmaxKeyLimit).
//
//   tang-run examples/varlen_decode_attention.mlir --size arg4=77
//
// sizes: arg4=1
// sizes: arg4=128
// sizes: arg4=77
func.func @main(%q: tensor<3x8x64xf32>, %K: tensor<3x2x128x64xf32>,
                %V: tensor<3x2x128x64xf32>, %pos: tensor<3xi32>,
                %n: index) -> tensor<3x8x64xf32> {
  %s = tang.comprehension (%b, %h, %j) [3, 8, %n] : tensor<3x8x?xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%b, %h, %e] : tensor<3x8x64xf32>
      %k = tang.read %K[%b, %h floordiv 4, %j, %e] : tensor<3x2x128x64xf32>
      %p = arith.mulf %a, %k : f32
      tang.yield %p : f32
    }
    %scale = arith.constant 0.125 : f32
    %r = arith.mulf %dot, %scale : f32
    %p0 = tang.read %pos[%b] : tensor<3xi32>
    %zero = arith.constant 0 : i32
    %last = arith.maxsi %p0, %zero : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %last : i32
    %ninf = arith.constant 0xFF800000 : f32
    %sm = arith.select %keep, %r, %ninf : f32
    tang.yield %sm : f32
  }
  %m = tang.comprehension (%b, %h) reduce (%j) [3, 8, %n] monoid(max) : tensor<3x8xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<3x8x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%b, %h) reduce (%j) [3, 8, %n] monoid(add) : tensor<3x8xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<3x8x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<3x8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %o = tang.comprehension (%b, %h, %d) reduce (%j) [3, 8, 64, %n] monoid(add) : tensor<3x8x64xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<3x8x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<3x8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%b, %h] : tensor<3x8xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%b, %h floordiv 4, %j, %d] : tensor<3x2x128x64xf32>
    %p0 = tang.read %pos[%b] : tensor<3xi32>
    %zero = arith.constant 0 : i32
    %last = arith.maxsi %p0, %zero : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %last : i32
    %fzero = arith.constant 0.0 : f32
    %vm = arith.select %keep, %v, %fzero : f32
    %r = arith.mulf %w, %vm : f32
    tang.yield %r : f32
  }
  return %o : tensor<3x8x64xf32>
}
