// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: tang-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEEP

// tang.scatter round-trips: its indices, extents, base, monoid and
// `deterministic`; the put's coordinates (dimensions and data symbols)
// and its policy (trap, the default, is not printed).
// CHECK-LABEL: func.func @embedding_grad
// CHECK: tang.scatter (%{{.*}}, %{{.*}}) [4, 8] into %{{.*}} monoid(add) deterministic : tensor<100x8xf32> {
// CHECK: tang.put %{{.*}} at [symbol(%{{.*}}), %{{.*}}] : f32
// KEEP-LABEL: func.func @embedding_grad
// KEEP: tang.scatter
func.func @embedding_grad(%tok: tensor<4xi32>, %dY: tensor<4x8xf32>, %zeros: tensor<100x8xf32>) -> tensor<100x8xf32> {
  %dE = tang.scatter (%i, %d) [4, 8] into %zeros monoid(add) deterministic : tensor<100x8xf32> {
    %t = tang.read %tok[%i] : tensor<4xi32>
    %row = arith.index_cast %t : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<4x8xf32>
    tang.put %g at [symbol(%row), %d] : f32
  }
  return %dE : tensor<100x8xf32>
}

// An insert (no monoid) at a runtime position, dropping a position past
// the cache; the body may read the base and nest a reduction.
// CHECK-LABEL: func.func @kv_insert
// CHECK: tang.scatter (%{{.*}}, %{{.*}}) [2, 16] into %[[K:.*]] : tensor<2x64x16xbf16> {
// CHECK: tang.read %[[K]][%{{.*}}, 0, %{{.*}}] : tensor<2x64x16xbf16>
// CHECK: tang.comprehension reduce
// CHECK: tang.put %{{.*}} at [%{{.*}}, symbol(%{{.*}}), %{{.*}}] drop : bf16
func.func @kv_insert(%K: tensor<2x64x16xbf16>, %k: tensor<2x16xbf16>, %pos: tensor<i32>) -> tensor<2x64x16xbf16> {
  %K1 = tang.scatter (%h, %e) [2, 16] into %K : tensor<2x64x16xbf16> {
    %p = tang.read %pos[] : tensor<i32>
    %row = arith.index_cast %p : i32 to index
    %v = tang.read %k[%h, %e] : tensor<2x16xbf16>
    %first = tang.read %K[%h, 0, %e] : tensor<2x64x16xbf16>
    %s = tang.comprehension reduce (%j) [16] monoid(add) : bf16 {
      %x = tang.read %k[%h, %j] : tensor<2x16xbf16>
      tang.yield %x : bf16
    }
    %a = arith.addf %v, %first : bf16
    %b = arith.addf %a, %s : bf16
    tang.put %b at [%h, symbol(%row), %e] drop : bf16
  }
  return %K1 : tensor<2x64x16xbf16>
}

// A user monoid of one component combines collisions.
tang.monoid @maxabs : [f32] identity [0.0 : f32] {
^bb0(%a: f32, %b: f32):
  %x = math.absf %a : f32
  %y = math.absf %b : f32
  %m = arith.maximumf %x, %y : f32
  tang.yield %m : f32
}
// CHECK-LABEL: func.func @user_monoid
// CHECK: tang.scatter (%{{.*}}) [6] into %{{.*}} monoid(@maxabs) : tensor<3xf32>
func.func @user_monoid(%x: tensor<6xf32>, %to: tensor<6xi32>, %base: tensor<3xf32>) -> tensor<3xf32> {
  %r = tang.scatter (%i) [6] into %base monoid(@maxabs) : tensor<3xf32> {
    %t = tang.read %to[%i] : tensor<6xi32>
    %c = arith.index_cast %t : i32 to index
    %v = tang.read %x[%i] : tensor<6xf32>
    tang.put %v at [symbol(%c)] : f32
  }
  return %r : tensor<3xf32>
}
