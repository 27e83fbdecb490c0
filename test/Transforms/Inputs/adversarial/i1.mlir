func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %C = tang.comprehension (%i) reduce (%k) [4, 3] monoid(add) : tensor<4xf32> {
    %one = arith.constant 1.0 : f32
    tang.yield %one : f32
  }
  return %C : tensor<4xf32>
}
