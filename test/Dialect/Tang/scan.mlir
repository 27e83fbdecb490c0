// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: tang-opt %s --tang-fuse | FileCheck %s --check-prefix=FUSE

// tang.scan round-trips: parallel indices, the scan index, extents, a
// builtin or a user monoid, several results.
// CHECK-LABEL: func.func @cumsum
// CHECK: tang.scan (%[[B:.*]]) along (%[[T:.*]]) [4, 16] monoid(add) : tensor<4x16xf32> {
// CHECK: tang.read %{{.*}}[%[[B]], %[[T]]] : tensor<4x16xf32>
func.func @cumsum(%X: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = tang.scan (%b) along (%t) [4, 16] monoid(add) : tensor<4x16xf32> {
    %x = tang.read %X[%b, %t] : tensor<4x16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<4x16xf32>
}

tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}

// CHECK-LABEL: func.func @recurrence
// CHECK: tang.scan along (%{{.*}}) [64] monoid(@affine_map) : tensor<64xf32>, tensor<64xf32> {
func.func @recurrence(%g: tensor<64xf32>, %x: tensor<64xf32>) -> tensor<64xf32> {
  %A, %h = tang.scan along (%t) [64] monoid(@affine_map) : tensor<64xf32>, tensor<64xf32> {
    %gt = tang.read %g[%t] : tensor<64xf32>
    %xt = tang.read %x[%t] : tensor<64xf32>
    tang.yield %gt, %xt : f32, f32
  }
  return %h : tensor<64xf32>
}

// Fusion leaves a scan's body alone (the producer stays).
// FUSE-LABEL: func.func @producer
// FUSE: tang.comprehension
// FUSE: tang.scan
func.func @producer(%X: tensor<16xf32>) -> tensor<16xf32> {
  %e = tang.comprehension (%i) [16] : tensor<16xf32> {
    %x = tang.read %X[%i] : tensor<16xf32>
    %y = math.exp %x : f32
    tang.yield %y : f32
  }
  %y = tang.scan along (%t) [16] monoid(max) : tensor<16xf32> {
    %x = tang.read %e[%t] : tensor<16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<16xf32>
}
