func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %P = tang.comprehension (%p) [4] : tensor<4xf32> {
    %c = arith.constant 3.0 : f32
    tang.yield %c : f32
  }
  %C = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P[%i] : tensor<4xf32>
    %x = tang.read %X[%i] : tensor<4xf32>
    %s = arith.addf %a, %x : f32
    tang.yield %s : f32
  }
  return %C : tensor<4xf32>
}
