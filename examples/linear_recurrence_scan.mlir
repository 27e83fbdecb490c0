// The gated linear recurrence of examples/linear_recurrence.mlir at length
// 65536, as a scan: the same associative, not commutative monoid (the
// composition of the affine maps h -> a[k] * h + x[k]), but every prefix is
// kept by the scan itself, so the work is O(n) instead of the triangular
// form's O(n^2):
//
//   h[t] = a[t] * h[t-1] + x[t],   h[-1] = 0,   a[t] = sigmoid(g[t])
//
// g, x: 65536.
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}

func.func @main(%g: tensor<65536xf32>, %x: tensor<65536xf32>) -> tensor<65536xf32> {
  %A, %h = tang.scan along (%t) [65536] monoid(@affine_map) : tensor<65536xf32>, tensor<65536xf32> {
    %gt = tang.read %g[%t] : tensor<65536xf32>
    %xt = tang.read %x[%t] : tensor<65536xf32>
    %one = arith.constant 1.0 : f32
    %ng = arith.negf %gt : f32
    %e = math.exp %ng : f32
    %den = arith.addf %one, %e : f32
    %at = arith.divf %one, %den : f32
    tang.yield %at, %xt : f32, f32
  }
  return %h : tensor<65536xf32>
}
