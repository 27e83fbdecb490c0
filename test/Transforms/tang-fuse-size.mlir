// RUN: tang-opt %s --tang-fuse | FileCheck %s --check-prefix=DEFAULT
// RUN: tang-opt %s --tang-fuse="max-body-ops=12" | FileCheck %s --check-prefix=SMALL

// Each stage reads the previous one at two points (i and 3 - i), so fusing
// copies a stage's body twice per stage: the copies multiply along the
// chain. The default budget fuses this short chain whole; a small
// max-body-ops keeps producers once the consumer's body would outgrow it.
// DEFAULT-COUNT-1: = tang.comprehension (
// DEFAULT-NOT: = tang.comprehension (
// SMALL-COUNT-2: = tang.comprehension (
func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %P1 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %X[%i] : tensor<4xf32>
    %b = tang.read %X[3 - %i] : tensor<4xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  %P2 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P1[%i] : tensor<4xf32>
    %b = tang.read %P1[3 - %i] : tensor<4xf32>
    %s = arith.mulf %a, %b : f32
    tang.yield %s : f32
  }
  %P3 = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.read %P2[%i] : tensor<4xf32>
    %b = tang.read %P2[3 - %i] : tensor<4xf32>
    %s = arith.subf %a, %b : f32
    tang.yield %s : f32
  }
  return %P3 : tensor<4xf32>
}
