// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: not tang-opt %s --tang-grad 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: tang-opt %s --convert-tang-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tang-opt %s --tang-fuse | FileCheck %s --check-prefix=FUSE
// RUN: tang-opt %s --tang-traffic-bound="levels=shared=233472" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LP

// tang.gather round-trips with each out-of-range policy (trap, the default,
// is not printed); data coordinates are the map's symbols.
// CHECK-LABEL: func.func @embedding
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}), %{{.*}}] : tensor<100x8xf32>
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}) + 1, %{{.*}}] clamp : tensor<100x8xf32>
// CHECK: tang.gather %{{.*}}[symbol(%{{.*}}), %{{.*}}] zero : tensor<100x8xf32>
// The trap gather's token ids are checked by the runtime before a run.
// GPU: tang.index_checks = [{arg = 1 : i64, bound = 100 : i64
// GRAD: error: 'tang.gather' op clamps coordinate #0 (s0 + 1), which is not one data value: --tang-grad cannot yet scatter its gradient to the clamped element
// A gather's data coordinates are left out of the traffic LP like
// non-projective ones (it touches at least one element per value of its
// other coordinates); its tensor counts no compulsory traffic (the tokens
// and the result do: 4 + 32).
// LP: remark: traffic bound relaxed: %arg0 (coordinates s0); %arg0 (coordinates s0 + 1); %arg0 (coordinates s0) bounded through single-index coordinates only
// LP: compulsory 36 elements
func.func @embedding(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  // A producer that gathers fuses like one that reads: one comprehension
  // remains, the gathers in it.
  // FUSE-LABEL: func.func @embedding
  // FUSE: tang.comprehension
  // FUSE: tang.gather
  // FUSE-NOT: tang.comprehension
  // FUSE: arith.mulf
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

// Fused into a consumer that reads it transposed and sums over the rows,
// the gather's dimensions are the consumer's (%p0 is d, the data still the
// token the fused body reads at the reduced index).
// FUSE-LABEL: func.func @fused_transposed
// FUSE: tang.comprehension (%[[D:.*]]) reduce (%[[B:.*]]) [8, 4]
// FUSE: %[[T:.*]] = tang.read %{{.*}}[%[[B]]] : tensor<4xi32>
// FUSE: %[[R:.*]] = arith.index_cast %[[T]]
// FUSE: tang.gather %{{.*}}[symbol(%[[R]]), %[[D]]] zero : tensor<100x8xf32>
func.func @fused_transposed(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<8xf32> {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] zero : tensor<100x8xf32>
    tang.yield %e : f32
  }
  %y = tang.comprehension (%d) reduce (%b) [8, 4] monoid(add) : tensor<8xf32> {
    %v = tang.read %x[%b, %d] : tensor<4x8xf32>
    tang.yield %v : f32
  }
  return %y : tensor<8xf32>
}
