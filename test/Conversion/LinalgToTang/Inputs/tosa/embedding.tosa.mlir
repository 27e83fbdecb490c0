func.func @main(%table: tensor<1x32x8xf32>, %ids: tensor<1x5xi32>) -> tensor<1x5x8xf32> {
  %y = tosa.gather %table, %ids : (tensor<1x32x8xf32>, tensor<1x5xi32>) -> tensor<1x5x8xf32>
  return %y : tensor<1x5x8xf32>
}
