// RUN: tang-opt %s --tang-fuse --verify-diagnostics | FileCheck %s

// The work model counts a row's shared values once only where the kernel
// shares them. Fusing the residual %h (a GEMM plus x) into the RMSNorm
// would make the norm's body hold the GEMM in its mean square: the norm
// becomes matmul-like, gets a tiled kernel that evaluates the body per
// element, and would recompute the mean square, GEMM and all, 64 times per
// row. So %h stays materialised (the norm of a materialised row is a row
// kernel, which computes the mean square once per row).
// CHECK-LABEL: func.func @residual_norm
// CHECK: %[[H:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) [64, 64]
// CHECK: tang.read %arg1
// CHECK: tang.comprehension (%{{.*}}, %{{.*}}) [64, 64]
// CHECK-NOT: tang.read %arg1
// CHECK: tang.read %[[H]]
func.func @residual_norm(%x: tensor<64x64xf32>, %o: tensor<64x64xf32>,
                         %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %h = tang.comprehension (%i, %e) [64, 64] : tensor<64x64xf32> {
    %p = tang.comprehension reduce (%c) [64] monoid(add) : f32 {
      %a = tang.read %o[%i, %c] : tensor<64x64xf32>
      %b = tang.read %w[%c, %e] : tensor<64x64xf32>
      %m = arith.mulf %a, %b : f32
      tang.yield %m : f32
    }
    %v = tang.read %x[%i, %e] : tensor<64x64xf32>
    %r = arith.addf %v, %p : f32
    tang.yield %r : f32
  }
  // expected-remark @+1 {{tang-fuse: fusing into this comprehension would execute}}
  %y = tang.comprehension (%i, %e) [64, 64] : tensor<64x64xf32> {
    %ss = tang.comprehension reduce (%k) [64] monoid(add) : f32 {
      %v = tang.read %h[%i, %k] : tensor<64x64xf32>
      %v2 = arith.mulf %v, %v : f32
      tang.yield %v2 : f32
    }
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %ms = arith.divf %ss, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %r = math.rsqrt %mse : f32
    %v = tang.read %h[%i, %e] : tensor<64x64xf32>
    %out = arith.mulf %v, %r : f32
    tang.yield %out : f32
  }
  return %y : tensor<64x64xf32>
}
