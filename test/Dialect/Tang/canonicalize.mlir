// RUN: tang-opt %s --canonicalize --split-input-file | FileCheck %s

// A view of a view folds into one view of the source with the composed map.
// CHECK-DAG:   #[[$SWAP_SLICE:.*]] = affine_map<(d0, d1) -> (d1 + 1, d0)>
// CHECK-LABEL: func.func @view_of_view
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[V:.*]] = tang.view %[[A]] by #[[$SWAP_SLICE]] : tensor<4x8xf32> to tensor<8x3xf32>
// CHECK-NEXT:    return %[[V]]
func.func @view_of_view(%A: tensor<4x8xf32>) -> tensor<8x3xf32> {
  // Rows 1..3 of A, then transposed.
  %S = tang.view %A by affine_map<(d0, d1) -> (d0 + 1, d1)> : tensor<4x8xf32> to tensor<3x8xf32>
  %T = tang.view %S by affine_map<(d0, d1) -> (d1, d0)> : tensor<3x8xf32> to tensor<8x3xf32>
  return %T : tensor<8x3xf32>
}

// -----

// Transposing twice composes to the identity map, and the identity view is dropped.
// CHECK-LABEL: func.func @transpose_twice
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NOT:     tang.view
// CHECK:         return %[[A]]
func.func @transpose_twice(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x8xf32> to tensor<8x4xf32>
  %U = tang.view %T by affine_map<(d0, d1) -> (d1, d0)> : tensor<8x4xf32> to tensor<4x8xf32>
  return %U : tensor<4x8xf32>
}

// -----

// An identity view is dropped.
// CHECK-LABEL: func.func @identity_view
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NOT:     tang.view
// CHECK:         return %[[A]]
func.func @identity_view(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %V = tang.view %A by affine_map<(d0, d1) -> (d0, d1)> : tensor<4x8xf32> to tensor<4x8xf32>
  return %V : tensor<4x8xf32>
}

// -----

// An identity map that changes the shape (a slice) is a real view and stays.
// CHECK-LABEL: func.func @identity_map_slice
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[V:.*]] = tang.view %[[A]] by #{{.*}} : tensor<4x8xf32> to tensor<2x8xf32>
// CHECK-NEXT:    return %[[V]]
func.func @identity_map_slice(%A: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %V = tang.view %A by affine_map<(d0, d1) -> (d0, d1)> : tensor<4x8xf32> to tensor<2x8xf32>
  return %V : tensor<2x8xf32>
}

// -----

// A read of a transpose view becomes a read of the source with swapped indices.
// CHECK-LABEL: func.func @read_of_transpose
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NOT:     tang.view
// CHECK:         tang.comprehension (%[[P0:.*]], %[[P1:.*]]) [8, 4] : tensor<8x4xf32> {
// CHECK-NEXT:      %[[X:.*]] = tang.read %[[A]][%[[P1]], %[[P0]]] : tensor<4x8xf32>
// CHECK-NEXT:      tang.yield %[[X]] : f32
func.func @read_of_transpose(%A: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x8xf32> to tensor<8x4xf32>
  %B = tang.comprehension (%i, %j) [8, 4] : tensor<8x4xf32> {
    %x = tang.read %T[%i, %j] : tensor<8x4xf32>
    tang.yield %x : f32
  }
  return %B : tensor<8x4xf32>
}

// -----

// A read of a sliding-window view composes with the read's own expressions.
// CHECK-LABEL: func.func @read_of_window
// CHECK-SAME:    (%[[I:.*]]: tensor<10xf32>)
// CHECK-NOT:     tang.view
// CHECK:         tang.comprehension (%[[P0:.*]]) reduce (%[[R0:.*]]) [4, 3] monoid(add) : tensor<4xf32> {
// CHECK-NEXT:      tang.read %[[I]][%[[P0]] * 2 + %[[R0]]] : tensor<10xf32>
func.func @read_of_window(%I: tensor<10xf32>) -> tensor<4xf32> {
  %W = tang.view %I by affine_map<(h, r) -> (h + r)> : tensor<10xf32> to tensor<8x3xf32>
  %C = tang.comprehension (%h) reduce (%r) [4, 3] monoid(add) : tensor<4xf32> {
    %x = tang.read %W[%h * 2, %r] : tensor<8x3xf32>
    tang.yield %x : f32
  }
  return %C : tensor<4xf32>
}

// -----

// A read through two views folds all the way to the source.
// CHECK-LABEL: func.func @read_of_view_chain
// CHECK-SAME:    (%[[V:.*]]: tensor<8xf32>)
// CHECK-NOT:     tang.view
// CHECK:         tang.comprehension (%[[P0:.*]], %{{.*}}) [3, 4] : tensor<3x4xf32> {
// CHECK-NEXT:      tang.read %[[V]][%[[P0]]] : tensor<8xf32>
func.func @read_of_view_chain(%V: tensor<8xf32>) -> tensor<3x4xf32> {
  // Broadcast V over rows, then transpose: T[i, j] = V[i].
  %B = tang.view %V by affine_map<(d0, d1) -> (d1)> : tensor<8xf32> to tensor<4x8xf32>
  %T = tang.view %B by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x8xf32> to tensor<8x4xf32>
  %C = tang.comprehension (%i, %j) [3, 4] : tensor<3x4xf32> {
    %x = tang.read %T[%i, %j] : tensor<8x4xf32>
    tang.yield %x : f32
  }
  return %C : tensor<3x4xf32>
}

// -----

// A comprehension whose result is unused is erased; the one returned stays.
// CHECK-LABEL: func.func @dead_comprehension
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>)
// CHECK:         %[[LIVE:.*]] = tang.comprehension (%{{.*}}) [4] : tensor<4xf32>
// CHECK-NOT:     tang.comprehension
// CHECK:         return %[[LIVE]]
func.func @dead_comprehension(%A: tensor<4xf32>) -> tensor<4xf32> {
  %live = tang.comprehension (%i) [4] : tensor<4xf32> {
    %x = tang.read %A[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  %dead = tang.comprehension (%i) reduce (%k) [4, 4] monoid(max) : tensor<4xf32> {
    %x = tang.read %A[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %live : tensor<4xf32>
}

// -----

// A dead nested scalar comprehension is erased from the body it sits in.
// CHECK-LABEL: func.func @dead_nested
// CHECK:         tang.comprehension (%{{.*}}) [4] : tensor<4xf32> {
// CHECK-NOT:       tang.comprehension
// CHECK:           tang.yield
func.func @dead_nested(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %s = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %A[%i, %k] : tensor<4x8xf32>
      tang.yield %x : f32
    }
    %y = tang.read %A[%i, 0] : tensor<4x8xf32>
    tang.yield %y : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A comprehension whose result is used by another comprehension stays.
// CHECK-LABEL: func.func @used_comprehension
// CHECK:         %[[SUM:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(add) : tensor<4xf32>
// CHECK:         %[[OUT:.*]] = tang.comprehension (%[[P0:.*]]) [4] : tensor<4xf32> {
// CHECK-NEXT:      tang.read %[[SUM]][%[[P0]]] : tensor<4xf32>
// CHECK:         return %[[OUT]]
func.func @used_comprehension(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %sum = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) : tensor<4xf32> {
    %x = tang.read %A[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  %out = tang.comprehension (%i) [4] : tensor<4xf32> {
    %s = tang.read %sum[%i] : tensor<4xf32>
    %t = arith.mulf %s, %s : f32
    tang.yield %t : f32
  }
  return %out : tensor<4xf32>
}
