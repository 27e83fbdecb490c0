func.func @main(%Y: tensor<5xf32>) -> tensor<5x5xf32> {
  %P = tang.comprehension (%p, %q) [5, 5] : tensor<5x5xf32> {
    %y = tang.read %Y[(%p + %q) mod 5] : tensor<5xf32>
    tang.yield %y : f32
  }
  %C = tang.comprehension (%i, %j) [5, 5] : tensor<5x5xf32> {
    %v = tang.read %P[4 - %i, %j] : tensor<5x5xf32>
    tang.yield %v : f32
  }
  return %C : tensor<5x5xf32>
}
