// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: tang-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD
// RUN: tang-opt %s --tang-fuse | FileCheck %s --check-prefix=FUSE
// RUN: tang-opt %s --tang-traffic-bound="levels=shared=233472" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LP

// A padded read round-trips: a decimal fill untyped, a non-finite one typed
// (hexadecimal), an integer fill on an integer tensor; literals are
// converted to the element type.
// CHECK-LABEL: func.func @fills
// CHECK: tang.read %{{.*}}[%{{.*}} - 1] fill(0.000000e+00) : tensor<8xf32>
// CHECK: tang.read %{{.*}}[%{{.*}} + 1] fill(0xFF800000 : f32) : tensor<8xf32>
// CHECK: tang.read %{{.*}}[%{{.*}} - 2] fill(-1.500000e+00) : tensor<8xbf16>
// CHECK: tang.read %{{.*}}[%{{.*}} + 3] fill(7) : tensor<8xi32>
// CHECK: tang.read %{{.*}}[%{{.*}} - 1] fill(2.000000e+00) : tensor<8xf32>
func.func @fills(%X: tensor<8xf32>, %B: tensor<8xbf16>, %I: tensor<8xi32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %a = tang.read %X[%i - 1] fill(0.0) : tensor<8xf32>
    %b = tang.read %X[%i + 1] fill(0xFF800000 : f32) : tensor<8xf32>
    %c = tang.read %B[%i - 2] fill(-1.5) : tensor<8xbf16>
    %d = tang.read %I[%i + 3] fill(7) : tensor<8xi32>
    %e = tang.read %X[%i - 1] fill(2) : tensor<8xf32>
    %cf = arith.extf %c : bf16 to f32
    %df = arith.sitofp %d : i32 to f32
    %s0 = arith.addf %a, %b : f32
    %s1 = arith.addf %s0, %cf : f32
    %s2 = arith.addf %s1, %df : f32
    %s3 = arith.addf %s2, %e : f32
    tang.yield %s3 : f32
  }
  return %y : tensor<8xf32>
}

// A view folds into a padded read when it permutes coordinates with their
// extents (outside the view is outside the source); a slice view, even
// with an identity map, stays.
// FOLD-LABEL: func.func @views
// FOLD-NOT: to tensor<6x4xf32>
// FOLD: %[[S:.*]] = tang.view %{{.*}} : tensor<4x6xf32> to tensor<2x6xf32>
// FOLD: tang.read %{{.*}}[%{{.*}} - 1, %{{.*}}] fill(0.000000e+00) : tensor<4x6xf32>
// FOLD: tang.read %[[S]][%{{.*}} - 1, %{{.*}}] fill(0.000000e+00) : tensor<2x6xf32>
func.func @views(%A: tensor<4x6xf32>) -> tensor<6x2xf32> {
  %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x6xf32> to tensor<6x4xf32>
  %S = tang.view %A by affine_map<(d0, d1) -> (d0, d1)> : tensor<4x6xf32> to tensor<2x6xf32>
  %y = tang.comprehension (%j, %i) [6, 2] : tensor<6x2xf32> {
    %a = tang.read %T[%j, %i - 1] fill(0.0) : tensor<6x4xf32>
    %b = tang.read %S[%i - 1, %j] fill(0.0) : tensor<2x6xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %y : tensor<6x2xf32>
}

// Fusion leaves a producer read with padding (fused, it would run outside
// its domain); the padded read inside a fused producer keeps its fill.
// FUSE-LABEL: func.func @fusion
// FUSE: %[[P:.*]] = tang.comprehension
// FUSE: tang.comprehension
// FUSE: tang.read %[[P]][%{{.*}} - 1] fill(0.000000e+00)
// FUSE-LABEL: func.func @fused_keeps_fill
// FUSE: tang.comprehension
// FUSE-NOT: tang.comprehension
// FUSE: tang.read %{{.*}}[%{{.*}} - 1] fill(0.000000e+00) : tensor<8xf32>
// A padded read's coordinates bound nothing (an index may run past the
// tensor) and its tensor is not counted as compulsory traffic.
// LP: remark: traffic bound relaxed: %arg0 (coordinates d0 - 1); %arg0 (coordinates d0 + 1)
// LP: compulsory 8 elements
// LP: remark: traffic bound relaxed: %0 (coordinates d0 - 1)
func.func @fusion(%X: tensor<8xf32>) -> tensor<8xf32> {
  %p = tang.comprehension (%i) [8] : tensor<8xf32> {
    %x = tang.read %X[%i] : tensor<8xf32>
    %s = arith.mulf %x, %x : f32
    tang.yield %s : f32
  }
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %a = tang.read %p[%i - 1] fill(0.0) : tensor<8xf32>
    tang.yield %a : f32
  }
  return %y : tensor<8xf32>
}

func.func @fused_keeps_fill(%X: tensor<8xf32>) -> tensor<8xf32> {
  %p = tang.comprehension (%i) [8] : tensor<8xf32> {
    %x = tang.read %X[%i - 1] fill(0.0) : tensor<8xf32>
    %s = arith.mulf %x, %x : f32
    tang.yield %s : f32
  }
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %a = tang.read %p[%i] : tensor<8xf32>
    %e = math.exp %a : f32
    tang.yield %e : f32
  }
  return %y : tensor<8xf32>
}
