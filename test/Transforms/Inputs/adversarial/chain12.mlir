// A chain of maps each reading the previous at two points (review: fusion
// once copied bodies 2^n times here).
func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %P0 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %X[%i] : tensor<4xf32>
    %b = tang.read %X[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P1 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P0[%i] : tensor<4xf32>
    %b = tang.read %P0[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P2 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P1[%i] : tensor<4xf32>
    %b = tang.read %P1[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P3 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P2[%i] : tensor<4xf32>
    %b = tang.read %P2[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P4 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P3[%i] : tensor<4xf32>
    %b = tang.read %P3[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P5 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P4[%i] : tensor<4xf32>
    %b = tang.read %P4[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P6 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P5[%i] : tensor<4xf32>
    %b = tang.read %P5[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P7 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P6[%i] : tensor<4xf32>
    %b = tang.read %P6[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P8 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P7[%i] : tensor<4xf32>
    %b = tang.read %P7[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P9 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P8[%i] : tensor<4xf32>
    %b = tang.read %P8[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P10 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P9[%i] : tensor<4xf32>
    %b = tang.read %P9[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P11 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P10[%i] : tensor<4xf32>
    %b = tang.read %P10[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %P11 : tensor<4xf32>
}
