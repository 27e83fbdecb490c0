// A gated linear recurrence (the state update of linear-attention and
// state-space layers), written as a reduction under a user monoid that is
// associative but NOT commutative:
//
//   h[t] = a[t] * h[t-1] + x[t],   h[-1] = 0,   a[t] = sigmoid(g[t])
//        = fold over k <= t of the affine maps  h -> a[k] * h + x[k]
//
// The carrier (A, B) is the map h -> A * h + B; combine(first, second)
// applies `first`, then `second`. Elements past t are the identity map
// (1, 0). Every kernel that splits the reduction over threads must combine
// the parts in index order: any other order gives a different number.
// Length 2048, g and x: 2048.
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}

func.func @main(%g: tensor<2048xf32>, %x: tensor<2048xf32>) -> tensor<2048xf32> {
  %A, %h = tang.comprehension (%t) reduce (%k) [2048, 2048] monoid(@affine_map) : tensor<2048xf32>, tensor<2048xf32> {
    %gk = tang.read %g[%k] : tensor<2048xf32>
    %xk = tang.read %x[%k] : tensor<2048xf32>
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %ng = arith.negf %gk : f32
    %e = math.exp %ng : f32
    %den = arith.addf %one, %e : f32
    %ak = arith.divf %one, %den : f32
    %vt = tang.index %t : i32
    %vk = tang.index %k : i32
    %keep = arith.cmpi sle, %vk, %vt : i32
    %a = arith.select %keep, %ak, %one : f32
    %b = arith.select %keep, %xk, %zero : f32
    tang.yield %a, %b : f32, f32
  }
  return %h : tensor<2048xf32>
}
