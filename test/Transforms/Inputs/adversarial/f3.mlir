func.func @main(%Y: tensor<5xf32>) -> tensor<5x5xf32> {
  %V = tang.view %Y by affine_map<(d0, d1) -> ((d0 + d1) mod 5)> : tensor<5xf32> to tensor<5x5xf32>
  %C = tang.comprehension (%i, %j) [5, 5] : tensor<5x5xf32> {
    %v = tang.read %V[4 - %i, %j] : tensor<5x5xf32>
    tang.yield %v : f32
  }
  return %C : tensor<5x5xf32>
}
