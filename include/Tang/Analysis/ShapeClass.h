//===- ShapeClass.h - the shape class of a comprehension --------*- C++ -*-===//
//
// Classifies a function-level comprehension by the shape of its graph (never
// by names): the class keys the schedule heuristic and, later, the
// shape-keyed emitters of the kernel form.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_ANALYSIS_SHAPECLASS_H
#define TANG_ANALYSIS_SHAPECLASS_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

namespace mlir::tang {

enum class ShapeClass {
  /// No reduction anywhere: one independent element per point.
  Pointwise,
  /// Reductions along the innermost (contiguous) coordinate of the tensors
  /// they read, shared by a row of the result (softmax, norms, row sums).
  RowReduction,
  /// Reductions along an outer coordinate while the innermost coordinate
  /// stays parallel (sums over rows); also a vector times matrices read
  /// down their columns (`w^T S`: the one side with no parallel index of
  /// its own, every read of the other contiguous in the output's last
  /// index and in no reduced one; static sizes).
  ColumnReduction,
  /// A contraction with a narrow parallel side (GEMV, small batch) read
  /// along its rows.
  NarrowMatVec,
  /// A contraction of two reads with parallel indices on both sides.
  MatmulLike,
  /// A reduction under the online-softmax monoid (attention).
  OnlineSoftmax,
};

/// The shape class of `op`, a function-level comprehension.
ShapeClass classifyComprehension(ComprehensionOp op);

/// Whether `op` (a narrow matrix-vector comprehension whose extents are
/// static but maybe the output's, a context length covered by a grid
/// stride) has the matrix-vector form a warp per output computes: its last
/// parallel index `n` is the output; either `op` reduces over one index (the
/// last) or its body holds reductions of one index each, at its top level,
/// whose bodies use no value of `op`'s body but its indices; every such
/// reduction reads a tensor at a coordinate that uses `n` (a weight row: a
/// reduction that does not depend on the output would be recomputed by every
/// warp) and reduces with add, max or min over values computed in f32.
bool isMatVecForm(ComprehensionOp op);

/// The printable name of a shape class (`pointwise`, `row_reduction`, ...).
StringRef stringifyShapeClass(ShapeClass c);

} // namespace mlir::tang

#endif // TANG_ANALYSIS_SHAPECLASS_H
