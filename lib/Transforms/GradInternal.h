//===- GradInternal.h - what the parts of --tang-grad share ----*- C++ -*-===//
//
// --tang-grad in six files, layered: GradHoist.cpp (the save policy:
// nested comprehensions hoisted to saved tensors), GradIndex.cpp (solving a
// read's coordinates for the indices: masks and inverses), GradRules.cpp
// (the scalar derivative rules and body cloning), GradReads.cpp (the
// gradient of one read), GradScatterScan.cpp (scatters and scans), Grad.cpp
// (the walk over a function and the pass).
// Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_TRANSFORMS_GRADINTERNAL_H
#define TANG_LIB_TRANSFORMS_GRADINTERNAL_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <optional>
#include <tuple>

namespace mlir::tang::grad {

//===----------------------------------------------------------------------===//
// Hoisting nested comprehensions (GradHoist.cpp)
//===----------------------------------------------------------------------===//

/// Hoists `nested` (a comprehension in another's body) to a function-level
/// comprehension over the enclosing indices it uses, placed before `top`,
/// and replaces it by reads of that tensor. Values of the enclosing bodies
/// it uses (a mean in a variance, even a kept nested sum) are recomputed in
/// its body.
LogicalResult hoistNested(ComprehensionOp nested, ComprehensionOp top);
/// Whether `n`, nested in `top`, may stay in the body and be recomputed by
/// the gradients: a sum directly in `top`'s body, of scalar code over the
/// indices and function-level tensors; with `always` unset, only when
/// saving it would take a tensor larger than `largest` elements.
bool isRecomputable(ComprehensionOp n, ComprehensionOp top, int64_t largest,
                    bool always);

//===----------------------------------------------------------------------===//
// Index solving (GradIndex.cpp)
//===----------------------------------------------------------------------===//

/// A condition lower <= expression < upper (an equality as (e, 0, 1)).
using Mask = std::tuple<AffineExpr, int64_t, int64_t>;

/// How the indices of a comprehension map to the gradient comprehension of
/// one of its reads: G's dimensions are the read tensor's coordinates, then
/// the free indices.
struct Solution {
  /// Per index of the forward comprehension: its value over G's dimensions.
  SmallVector<AffineExpr> index;
  /// Per index: the value to read at (within its range: `index` modulo
  /// the extent where `index` may leave it).
  SmallVector<AffineExpr> safeIndex;
  /// G's reduced extents.
  SmallVector<int64_t> freeExtents;
  /// Conditions for a contribution: (expression, lower, upper) meaning
  /// lower <= expression < upper, and (expression == 0) as (e, 0, 1).
  SmallVector<Mask> masks;
};

/// The inverse of a read's coordinates on their image, for reads injective
/// in the indices they use: coordinates that are mixed-radix sums of
/// indices (`h * 64 + e + 128`, e in [0, 64)) and (u floordiv q, u mod q)
/// pairs (a reshape).
struct Inverse {
  /// The indices the read uses, in coordinate order (within a coordinate,
  /// by decreasing coefficient): the dimensions of the read-shaped
  /// gradient.
  SmallVector<unsigned> used;
  /// Per forward index (null where unused): its value over the tensor's
  /// coordinates.
  SmallVector<AffineExpr> of;
};

/// A contribution to a tensor's cotangent: `tensor` read at `map` (over
/// the cotangent's coordinates; the identity where null) where `masks`
/// hold, zero elsewhere.
struct Part {
  Value tensor;
  AffineMap map;
  SmallVector<Mask> masks;
};

/// Bounds of `e` over dimensions ranging over [0, extent): the least and
/// greatest values for linear forms; through floordiv and mod by
/// constants, an interval holding every value.
std::optional<std::pair<int64_t, int64_t>> getBounds(AffineExpr e,
                                                     ArrayRef<int64_t> extents);

/// Solves the coordinates `coords` (affine over the forward comprehension's
/// indices, whose extents are `extents`) of a tensor of shape `shape`.
Solution solve(ArrayRef<AffineExpr> coords, ArrayRef<int64_t> extents,
               ArrayRef<int64_t> shape, MLIRContext *ctx);
/// The conjunction of `masks` (over `indices`), or null when there are
/// none.
Value emitMasks(OpBuilder &b, Location loc, ArrayRef<Mask> masks,
                ValueRange indices);
std::optional<Inverse> invert(ArrayRef<AffineExpr> coords,
                              ArrayRef<int64_t> extents, MLIRContext *ctx);

//===----------------------------------------------------------------------===//
// Scalar rules and body cloning (GradRules.cpp)
//===----------------------------------------------------------------------===//

/// Clones `op` at `b`: reads and index ops over the index values of
/// `exprOf` (affine expressions over `operands`, the index values in scope
/// at `b`) get their maps composed; a nested comprehension is cloned with
/// its own indices appended to `operands`.
Operation *cloneSubstituted(OpBuilder &b, Operation *op, IRMapping &mapping,
                            llvm::DenseMap<Value, AffineExpr> &exprOf,
                            SmallVector<Value> &operands);
/// Whether a reduction under `monoid` keeps one of its terms (max, min and
/// their arg forms): the cotangent goes to the terms equal to the result.
inline bool isExtremum(std::optional<MonoidKind> monoid) {
  return monoid == MonoidKind::Max || monoid == MonoidKind::Min ||
         monoid == MonoidKind::ArgMax || monoid == MonoidKind::ArgMin;
}
/// argmax and argmin: a value, then an index with no cotangent.
inline bool isArgExtremum(std::optional<MonoidKind> monoid) {
  return monoid == MonoidKind::ArgMax || monoid == MonoidKind::ArgMin;
}
/// `v` in `type` (floating point), extended or truncated.
Value castFloat(OpBuilder &b, Location loc, Value v, Type type);
/// The type saved statistics and softmax derivatives are computed in: f32
/// for 16-bit types (a running max rounded to bf16 would shift every
/// probability by up to exp(2^-8 |m|)), else `t`.
Type getStatisticsType(Type t);
/// The softmax probability of score `s` given the running max `m` and sum
/// `l`, exp(s - m) / l, as exp(s - (m + log l)): one exponential per
/// score, and the log-sum-exp shared by every score of a row (a GPU kernel
/// computes it once per row and tile; the division by l would cost a
/// second special-function instruction per score).
Value probability(OpBuilder &b, Location loc, Value s, Value m, Value l);
/// The operations of `c`'s body that `v` depends on (a nested
/// comprehension stands for its contents) and the indices of `c` they use.
void getBodySlice(ComprehensionOp c, Value v,
                  llvm::SetVector<Operation *> &slice,
                  llvm::SmallDenseSet<unsigned, 8> &used);

/// Reverse mode over the scalar ops `ops` (in program order) of a body at
/// `b`: `adjoint` holds the seeds; returns failure (with a diagnostic) when
/// an op on a differentiated path has no rule.
///
/// Long by design (about 160 lines): the table of scalar derivative rules,
/// one case per arith and math op, in one place.
LogicalResult backpropagate(OpBuilder &b, ArrayRef<Operation *> ops,
                            llvm::DenseMap<Value, Value> &adjoint,
                            const llvm::DenseSet<Operation *> &onPath);

//===----------------------------------------------------------------------===//
// Scatters and scans (GradScatterScan.cpp)
//===----------------------------------------------------------------------===//

/// Moves the values each scatter of `f` writes, and the elements each scan
/// folds, to a comprehension over their domain whose tensor the scatter or
/// scan then reads at its indices (values already read so stay): their
/// reads are then differentiated by the comprehension rules.
void splitBodies(func::FuncOp f);

//===----------------------------------------------------------------------===//
// The differentiator (Grad.cpp; the gradient of a read: GradReads.cpp)
//===----------------------------------------------------------------------===//

/// The cotangent of an online_softmax reduction's scores,
///
///   ds(i, j) = p(i, j) (sum_e dO(i, e) v(j, e) - D(i)),
///   D(i) = sum_e dO(i, e) O(i, e),   p = exp(s - m) / l,
///
/// seeded in the gradients of the reads the scores use, over the
/// normalizer's indices (i, j): the output's columns e are summed once, in
/// the nested dot product and in D, not around the whole gradient (which
/// would make attention's dQ a sum over (j, e) with the score inside).
struct ScoreSeed {
  ComprehensionOp online;
  Value m, l, d, dOut;
};

class Differentiator {
public:
  Differentiator(func::FuncOp grad, ArrayRef<unsigned> wrt,
                 unsigned &numGradients)
      : grad(grad), wrt(wrt), numGradients(numGradients) {}

  /// Builds the gradients of `wrt` given the cotangents `seeds` of the
  /// returned values; returns them in `wrt` order.
  FailureOr<SmallVector<Value>> run(ArrayRef<std::pair<Value, Value>> seeds);

private:
  /// Whether `op`'s body reads (or gathers from) a tensor that needs a
  /// gradient.
  bool readsGradientOf(Operation *op);
  /// Whether the scatter `s` passes a gradient (to its base or to the
  /// values it writes); sets `status` to a failure (with a diagnostic)
  /// when it would but --tang-grad has no rule for it.
  bool prepareScatter(ScatterOp s, LogicalResult &status);
  /// The cotangents of `s`'s base and of the tensor of values it writes
  /// (splitBodies) from `dOut`, the cotangent of its result
  /// (GradScatterScan.cpp).
  LogicalResult differentiateScatter(ScatterOp s, Value dOut);
  /// The cotangents of the tensors of `scan`'s elements (splitBodies) from
  /// `dY`, those of its results (null: none) (GradScatterScan.cpp).
  LogicalResult differentiateScan(ScanOp scan, ArrayRef<Value> dY);
  /// A tensor scan under the composition of affine maps (its states'
  /// cotangent `dY[1]`; the products of the transitions are unused).
  LogicalResult differentiateTensorScan(TensorScanOp scan, ArrayRef<Value> dY);
  /// A forward substitution X = (I - L)^-1 Y, from `dX`: dY by the
  /// transposed system (a solve with rows reversed), dL = dY X^T below the
  /// diagonal (GradScatterScan.cpp).
  LogicalResult differentiateTriangularSolve(TriangularSolveOp solve, Value dX);
  LogicalResult differentiate(ComprehensionOp c,
                              ArrayRef<Value> resultCotangents);
  /// `saved`: the tie counts of a max/min reduction; (m, l, tie counts)
  /// of a softmax_norm one; (m, l) of an online_softmax one.
  /// `nested`: the recomputed nested sum in `c`'s body holding `read`.
  /// With `score`, `c` is an online_softmax reduction's normalizer and
  /// the scores are seeded with ScoreSeed's cotangent.
  /// `read` is a tang.read or a tang.gather; a gather's gradient is
  /// computed over the domain's own points and scattered (added) into the
  /// gathered tensor at its coordinates (scatterGatherGradient).
  LogicalResult emitReadGradient(ComprehensionOp c, Operation *read,
                                 ComprehensionOp nested,
                                 ArrayRef<Value> resultCotangents,
                                 ArrayRef<Value> saved,
                                 const ScoreSeed *score = nullptr);
  /// The scatter-add of `g` (the gradient at each point of c's domain,
  /// then nested's) into zeros shaped like the gathered tensor, at the
  /// gather's coordinates (its data recomputed): trap stays trap, zero
  /// drops, clamp writes to the clamped row.
  FailureOr<Value> scatterGatherGradient(ComprehensionOp c, GatherOp gather,
                                         ComprehensionOp nested, Value g);
  /// An online_softmax reduction: the values' reads through c (seeded
  /// dO p), the scores' reads through its normalizer (ScoreSeed).
  LogicalResult differentiateOnlineSoftmax(ComprehensionOp c,
                                           ArrayRef<Value> cotangents);
  /// The sum of `parts` (tensors of type `type`), or zeros.
  Value sum(ArrayRef<Part> parts, RankedTensorType type, Location loc);
  /// For a max/min reduction: the number of terms equal to the result.
  Value tieCount(ComprehensionOp c);
  /// For an online_softmax reduction: its running max and sum (m, l), by
  /// a softmax_norm reduction of the same scores over the parallel indices
  /// they use (attention: per row, [B, H, L]), in getStatisticsType.
  /// `clones` maps c's score operations to the normalizer's.
  ComprehensionOp normalizer(ComprehensionOp c, IRMapping &clones);
  /// D = sum_e dO(.., e) O(.., e) over the normalizer's indices of the
  /// online_softmax reduction `c` (ScoreSeed).
  Value rowDot(ComprehensionOp c, Value dOut);

  func::FuncOp grad;
  ArrayRef<unsigned> wrt;
  unsigned &numGradients;
  /// Tensors whose gradient is wanted or flows to one that is.
  llvm::DenseSet<Value> needsGradient;
  /// Per online_softmax comprehension: the parallel indices its saved
  /// (m, l) are indexed by.
  llvm::DenseMap<Operation *, SmallVector<unsigned>> normalizerIndices;
  /// Cotangent contributions per tensor.
  llvm::MapVector<Value, SmallVector<Part>> contributions;
  /// Where gradient comprehensions go: before the return.
  OpBuilder builder{grad.getContext()};
};

} // namespace mlir::tang::grad

#endif // TANG_LIB_TRANSFORMS_GRADINTERNAL_H
