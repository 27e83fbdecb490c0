//===- KernelMatchers.h - what the tensor-core kernels match ----*- C++ -*-===//
//
// The analyses --convert-tang-to-gpu selects kernels by, apart from the
// emitters that build them: contractions of two 16-bit (or tf32) reads,
// operand layouts (contiguous, bulk-copyable boxes), causal and banded key
// limits, and value equality across comprehensions. They read tang IR and
// build nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_ANALYSIS_KERNELMATCHERS_H
#define TANG_ANALYSIS_KERNELMATCHERS_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace mlir::tang {

/// A contraction a tensor-core kernel can compute: `red` is an add-reduction
/// over one index `k` of the product of two reads `a` and `b` of f16 or bf16
/// tensors; it is `op` itself, or the one comprehension nested in the body
/// of `op` (whose other operations are the epilogue, applied per element).
/// `a` uses the parallel index `m` and `b` the parallel index `n` (the last
/// one of `op`); the other parallel indices are batch indices.
struct MmaContraction {
  ComprehensionOp red;
  ReadOp a, b;
  unsigned m, n;
  /// Whether `b`'s last coordinate is `k` (a [.., n, k] operand, the layout
  /// of nn.Linear's weight); otherwise it is `n` (a [.., k, n] operand).
  bool bKContiguous;
  /// Whether `a`'s last coordinate is `k`; otherwise it is `m` (an A^T
  /// operand, [.., k, m]: wgmma only).
  bool aKContiguous;
  /// The operands' element type (f16 or bf16).
  Type elementType;
  int64_t extentM, extentN, extentK;
};

/// Whether `read`'s last coordinate is exactly the index `v` (no scale, no
/// offset) and no other coordinate uses `v`, with rows of whole 16-byte
/// chunks: then 8 consecutive values of `v` are one aligned 16-byte load.
bool isContiguousIn(ReadOp read, Value v);

/// If the tiles of `read` along `row` (tile rows) and `col` (tile columns)
/// are boxes of its tensor that a bulk tensor copy fills, the position of
/// the coordinate holding `row`: `col` plus terms of `isBatch` indices in
/// the last coordinate, `row` plus such terms in exactly one other, only
/// `isBatch` indices elsewhere, at most 5 coordinates. (Whether positions
/// past an extent read zeros is the caller's to check.)
std::optional<unsigned> getBoxRowCoordinate(ReadOp read, Value row, Value col,
                                            function_ref<bool(Value)> isBatch);

/// Whether `read` can be loaded `v` elements at a time along `row`, from a
/// multiple of `v` (KernelMatchers.cpp says when).
bool isVectorizable(ReadOp read, Value row, int64_t v);
/// The same for a gather whose data coordinates do not depend on `row` and
/// sit outside the last coordinate (a weight row picked by data), with the
/// clamp or zero policy.
bool isVectorizable(GatherOp gather, Value row, int64_t v);

/// The tensor a read or a gather accesses.
Value getAccessedTensor(Operation *access);

/// Whether `access` (a read or a gather) uses `index` in a coordinate, or,
/// given `scope` (the body of the comprehension whose index it is), a
/// gather's data depends on it (an expert picked per token is a different
/// row per token).
bool accessUses(Operation *access, Value index, Block *scope = nullptr);

/// The nested reductions a map without a row shares among a block's
/// threads (a row kernel without a row, isRowlessSchedule): their longest
/// extent and the vector width their reads along the reduction take.
struct RowlessWork {
  int64_t length, vector;
};

/// For a map (no reduced index) whose body holds reductions of one static
/// index, at least one 1024 or more long, that read along the map's last
/// index (so the last index is no row the threads could share), that work;
/// else nothing. --tang-schedule then makes each point a block, and the
/// tuner varies the threads sharing `length`.
std::optional<RowlessWork> getRowlessWork(ComprehensionOp op);

/// Whether `e` is a sum of terms that are each a multiple of `m` for every
/// value of the dimensions (constants, and products with such a factor).
bool isSumOfMultiples(AffineExpr e, int64_t m);

/// Whether `v` depends on `index` (through operands and nested bodies of
/// operations inside `scope`'s parent).
bool dependsOn(Value v, Value index, Block &scope);

/// The leaves of the product tree rooted at `v` (through mulf and extf).
void getFactors(Value v, SmallVectorImpl<Value> &leaves);

/// `v` as index `index` plus a constant, if it is a tang.index of that form.
std::optional<int64_t> getIndexOffset(Value v, Value index);

/// If `score` is select(j + a <= i + b, x, -inf) (a causal or banded mask,
/// any equivalent comparison of tang.index values of `i` and `j`, exact
/// over extents `extentI`, `extentJ`): c = b - a, keys j past i + c are
/// masked.
std::optional<int64_t> getKeyLimit(Value score, Value i, Value j,
                                   int64_t extentI, int64_t extentJ);

/// Whether `a` (in one comprehension's body) and `b` (in another's) compute
/// the same value, the first one's indices standing for the second's as
/// `indices` maps them (block arguments of nested bodies are added as they
/// are matched); `known` memoises matched values.
bool sameValue(Value a, Value b, IRMapping &indices,
               llvm::DenseMap<Value, Value> &known);

/// Whether `read` uses the index `v` in any coordinate.
bool readUses(ReadOp read, Value v);

/// `v` without value-preserving float extensions.
Value stripExtensions(Value v);

/// Whether `op` reads an f16 or bf16 tensor (then a tensor-core kernel that
/// refuses it says why in a remark).
bool readsSixteenBitTensors(ComprehensionOp op);

/// Whether `op` (or a comprehension nested in it) has a padded read: only
/// the SIMT kernel, which guards every element, takes it.
bool hasPaddedRead(ComprehensionOp op);

/// Matches `op` (a function-level comprehension) against the contraction
/// the tensor-core emitter handles; std::nullopt with `why` set otherwise.
/// With `allowTransposedA` (wgmma), the left operand may be contiguous in
/// m instead of k.
/// With `allowTf32`, f32 operands are accepted too (tf32 products on
/// mma.sync: 10 mantissa bits kept of each operand, f32 accumulation).
std::optional<MmaContraction> matchMmaContraction(ComprehensionOp op,
                                                  std::string &why,
                                                  bool allowTransposedA,
                                                  bool allowTf32);

/// Whether `monoid` is the composition of affine maps S -> A S + B on
/// [K, V] states: carrier (tensor<KxK>, tensor<KxV>) of f32 or f64, its
/// combine, term by term (comprehensions of products and sums of its
/// arguments read in place), (A1, B1) * (A2, B2) = (A2 A1, A2 B1 + B2).
bool isAffineComposition(MonoidOp monoid);

} // namespace mlir::tang

#endif // TANG_ANALYSIS_KERNELMATCHERS_H
