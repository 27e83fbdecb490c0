// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: not tang-opt %s --tang-grad 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: not tang-opt %s --convert-tang-to-gpu 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: tang-opt %s --tang-fuse | FileCheck %s --check-prefix=FUSE
// RUN: tang-opt %s --tang-traffic-bound="levels=shared=233472" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LP

// tang.gather round-trips with each out-of-range policy (trap, the default,
// is not printed); data coordinates are the map's symbols.
// CHECK-LABEL: func.func @embedding
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}), %{{.*}}] : tensor<100x8xf32>
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}) + 1, %{{.*}}] clamp : tensor<100x8xf32>
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}), %{{.*}}] zero : tensor<100x8xf32>
// GPU: error: 'tang.gather' op traps on an out-of-range coordinate, which kernels cannot report yet
// GRAD: error: 'tang.gather' op clamps coordinate #0 (s0 + 1), which is not one data value: --tang-grad cannot yet scatter its gradient to the clamped element
// LP: warning: no traffic bound: it gathers (data-dependent reads are not in the traffic LP yet)
func.func @embedding(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  // The producer gathers: fusion leaves it, two comprehensions remain.
  // FUSE-LABEL: func.func @embedding
  // FUSE: tang.gather
  // FUSE: tang.comprehension
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    %f = tang.gather %E[symbol(%row) + 1, %d] clamp : tensor<100x8xf32>
    %g = tang.gather %E[symbol(%row), %d] zero : tensor<100x8xf32>
    %s = arith.addf %e, %f : f32
    %t = arith.addf %s, %g : f32
    tang.yield %t : f32
  }
  %y = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %v = tang.read %x[%b, %d] : tensor<4x8xf32>
    %w = arith.mulf %v, %v : f32
    tang.yield %w : f32
  }
  return %y : tensor<4x8xf32>
}
