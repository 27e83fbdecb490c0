// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s
// RUN: tang-opt %s --tang-fuse --tang-online-softmax --tang-schedule | FileCheck %s --check-prefix=KEEP
// RUN: not tang-opt %s --tang-grad 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: tang-opt %s --tang-traffic-bound 2>&1 | FileCheck %s --check-prefix=BOUND

// Symbolic extents round-trip: an index argument, tensor.dim of a '?'
// dimension, arithmetic on sizes, in parallel and reduced positions and in a
// nested comprehension.

// CHECK-LABEL: func.func @scores
// CHECK-SAME: %[[LEN:[a-z0-9]+]]: index)
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [%[[LEN]], 8] monoid(add) : tensor<?xf32>
// GRAD: error: 'func.func' op cannot be differentiated yet: it has symbolic sizes
// BOUND: warning: no traffic bound: the comprehension has symbolic sizes
func.func @scores(%q: tensor<8xf32>, %K: tensor<16x8xf32>, %len: index) -> tensor<?xf32> {
  %s = tang.comprehension (%t) reduce (%d) [%len, 8] monoid(add) : tensor<?xf32> {
    %a = tang.read %q[%d] : tensor<8xf32>
    %k = tang.read %K[%t, %d] : tensor<16x8xf32>
    %p = arith.mulf %a, %k : f32
    tang.yield %p : f32
  }
  return %s : tensor<?xf32>
}

// CHECK-LABEL: func.func @rms_rows
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x4xf32>
// CHECK: %[[M:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: tang.comprehension (%{{.*}}) [%[[M]]] : tensor<?xf32>
// CHECK: tang.comprehension reduce (%{{.*}}) [4] monoid(add) : f32
// Fusion takes symbolic extents (the row sums fused into the square
// roots); schedules do not yet.
// KEEP-LABEL: func.func @rms_rows
// KEEP: tang.comprehension (%{{.*}}) [%{{.*}}] : tensor<?xf32>
// KEEP-NOT: schedule
// KEEP-NEXT: tang.comprehension reduce (%{{.*}}) [4] monoid(add) : f32
// KEEP: math.sqrt
// KEEP-NOT: tang.comprehension
// KEEP: return
func.func @rms_rows(%X: tensor<?x4xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %X, %c0 : tensor<?x4xf32>
  // Every row but the last: reads of %X[%i + 1] stay below dim 0 for every size.
  %m = arith.subi %n, %c1 : index
  %y = tang.comprehension (%i) [%m] : tensor<?xf32> {
    %ss = tang.comprehension reduce (%j) [4] monoid(add) : f32 {
      %x = tang.read %X[%i + 1, %j] : tensor<?x4xf32>
      %s = arith.mulf %x, %x : f32
      tang.yield %s : f32
    }
    tang.yield %ss : f32
  }
  %z = tang.comprehension (%i) [%m] : tensor<?xf32> {
    %v = tang.read %y[%i] : tensor<?xf32>
    %r = math.sqrt %v : f32
    tang.yield %r : f32
  }
  return %z : tensor<?xf32>
}

// CHECK-LABEL: func.func @window
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [%{{.*}}, %{{.*}}] monoid(max) : tensor<?xf32>
func.func @window(%X: tensor<64xf32>, %n: index, %w: index) -> tensor<?xf32> {
  %m = tang.comprehension (%t) reduce (%k) [%n, %w] monoid(max) : tensor<?xf32> {
    %x = tang.read %X[%t + %k] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %m : tensor<?xf32>
}
