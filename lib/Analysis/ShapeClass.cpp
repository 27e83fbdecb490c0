//===- ShapeClass.cpp - the shape class of a comprehension ------*- C++ -*-===//
//
// The class is read off the graph: which monoid reduces, whether the summand
// of an add-reduction is a product of reads of two different tensors (a
// contraction) and how the parallel indices split between its two sides,
// and where the reduced indices sit in the coordinates of the reads.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Analysis/KernelMatchers.h"

#include "llvm/ADT/SetOperations.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tang;

StringRef mlir::tang::stringifyShapeClass(ShapeClass c) {
  switch (c) {
  case ShapeClass::Pointwise:
    return "pointwise";
  case ShapeClass::RowReduction:
    return "row_reduction";
  case ShapeClass::ColumnReduction:
    return "column_reduction";
  case ShapeClass::NarrowMatVec:
    return "narrow_matvec";
  case ShapeClass::MatmulLike:
    return "matmul_like";
  case ShapeClass::OnlineSoftmax:
    return "online_softmax";
  }
  llvm_unreachable("unknown shape class");
}

/// The reads and gathers `v` is computed from, within the comprehension
/// bodies (nested comprehensions contribute the accesses of their bodies).
static llvm::SetVector<Operation *> getReadsFeeding(Value v) {
  llvm::SetVector<Operation *> reads;
  SmallVector<Value> worklist{v};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value cur = worklist.pop_back_val();
    if (!seen.insert(cur).second)
      continue;
    Operation *def = cur.getDefiningOp();
    if (!def)
      continue;
    if (isa<ReadOp, GatherOp>(def)) {
      reads.insert(def);
      continue;
    }
    if (auto nested = dyn_cast<ComprehensionOp>(def)) {
      nested.getBodyBlock().walk([&](Operation *r) {
        if (isa<ReadOp, GatherOp>(r))
          reads.insert(r);
      });
      continue;
    }
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
  }
  return reads;
}

/// True if some access in `reads` uses `index` (a block argument) in a
/// coordinate or through a gather's data.
static bool usesIndex(const llvm::SetVector<Operation *> &reads, Value index) {
  Block *scope = cast<BlockArgument>(index).getOwner();
  return llvm::any_of(
      reads, [&](Operation *r) { return accessUses(r, index, scope); });
}

/// Skips value-preserving casts.
static Value stripCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// What a symbolic extent counts as when a contraction's sides are
/// measured: wide (and the cap of the products, which cannot overflow).
/// Not tang-fuse's nominal 1024: there a symbolic extent stands for work,
/// here for narrowness (a context length is never a decode batch).
constexpr int64_t kWideExtent = int64_t(1) << 30;

/// Whether every access in `reads` is a read whose last (contiguous)
/// coordinate is a function of `op`'s last parallel index and of none of
/// `red`'s reduced indices: a matrix read down its columns.
static bool readsDownColumns(ComprehensionOp op, ComprehensionOp red,
                             const llvm::SetVector<Operation *> &reads) {
  unsigned np = op.getNumParallel();
  if (np == 0)
    return false;
  Value column = op.getIndex(np - 1);
  return llvm::all_of(reads, [&](Operation *o) {
    auto read = dyn_cast<ReadOp>(o);
    if (!read || read.getMap().getNumResults() == 0)
      return false;
    AffineExpr last = read.getMap().getResults().back();
    bool byColumn = false;
    for (auto [pos, v] : llvm::enumerate(read.getIndices())) {
      if (!last.isFunctionOfDim(pos))
        continue;
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner() == &red.getBodyBlock() &&
          red.isReducedIndex(arg.getArgNumber()))
        return false;
      byColumn |= v == column;
    }
    return byColumn;
  });
}

/// If `red` is an add-reduction of a product of reads of two different
/// tensors that both use its reduced indices, classifies the contraction by
/// how `op`'s parallel indices split between the two sides.
static std::optional<ShapeClass> classifyContraction(ComprehensionOp op,
                                                     ComprehensionOp red) {
  if (red.getBuiltinMonoid() != MonoidKind::Add || red.getNumResults() != 1)
    return std::nullopt;
  auto mul =
      stripCasts(red.getYield().getValues()[0]).getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  llvm::SetVector<Operation *> lhs = getReadsFeeding(mul.getLhs());
  llvm::SetVector<Operation *> rhs = getReadsFeeding(mul.getRhs());
  if (lhs.empty() || rhs.empty())
    return std::nullopt;
  // The same element on both sides (the same tensor at the same
  // coordinates): x * x, a norm, not a contraction. (A matrix squared,
  // N[r, q] N[q, s], reads one tensor at other coordinates.)
  auto sameAccess = [](Operation *a, Operation *b) {
    return a->getName() == b->getName() &&
           a->getOperands() == b->getOperands() &&
           a->getRawDictionaryAttrs() == b->getRawDictionaryAttrs();
  };
  auto covers = [&](const llvm::SetVector<Operation *> &xs,
                    const llvm::SetVector<Operation *> &ys) {
    return llvm::all_of(xs, [&](Operation *x) {
      return llvm::any_of(ys, [&](Operation *y) { return sameAccess(x, y); });
    });
  };
  if (covers(lhs, rhs) && covers(rhs, lhs))
    return std::nullopt;
  unsigned numParallelRed = red.getNumParallel();
  for (unsigned r = numParallelRed; r < red.getNumIndices(); ++r)
    if (!usesIndex(lhs, red.getIndex(r)) || !usesIndex(rhs, red.getIndex(r)))
      return std::nullopt;
  // Parallel indices of `op` used by one side only.
  // (A symbolic extent -- a context length -- counts as wide.)
  int64_t lhsOnly = 1, rhsOnly = 1;
  for (unsigned i = 0; i < op.getNumParallel(); ++i) {
    bool l = usesIndex(lhs, op.getIndex(i)),
         rr = usesIndex(rhs, op.getIndex(i));
    int64_t extent = op.isSymbolicExtent(i) ? kWideExtent : op.getExtent(i);
    if (l && !rr)
      lhsOnly = std::min(lhsOnly * extent, kWideExtent);
    if (rr && !l)
      rhsOnly = std::min(rhsOnly * extent, kWideExtent);
  }
  // Both sides indexed only by shared parallel indices: an elementwise
  // product reduced along a row (a dot per row, cross-entropy), not a
  // contraction.
  if (lhsOnly == 1 && rhsOnly == 1)
    return std::nullopt;
  // One side as narrow as a decode step's batch: matrix-vector. Up to 8
  // rows; up to 16 when the factors' storage types differ (16-bit weights
  // times f32 activations: no matrix unit takes them, and the product
  // streams its weights once for every row).
  auto storage = [](const llvm::SetVector<Operation *> &rs) -> Type {
    Type t;
    for (Operation *r : rs) {
      Type e =
          cast<ShapedType>(getAccessedTensor(r).getType()).getElementType();
      if (t && t != e)
        return Type();
      t = e;
    }
    return t;
  };
  Type lhsType = storage(lhs), rhsType = storage(rhs);
  int64_t narrow = lhsType && rhsType && lhsType != rhsType ? 16 : 8;
  if (lhsOnly > narrow && rhsOnly > narrow)
    return ShapeClass::MatmulLike;
  // A vector times a matrix read down its columns (`w^T S` with S stored
  // [K, V], `x W` with W stored [K, N]): the column kernel's lanes along
  // the matrix's contiguous coordinate, not a warp along its strided rows.
  bool lhsWide = lhsOnly > rhsOnly;
  if ((lhsWide ? rhsOnly : lhsOnly) == 1 && !hasSymbolicSizes(op) &&
      readsDownColumns(op, red, lhsWide ? lhs : rhs))
    return ShapeClass::ColumnReduction;
  return ShapeClass::NarrowMatVec;
}

ShapeClass mlir::tang::classifyComprehension(ComprehensionOp op) {
  if (op.getBuiltinMonoid() == MonoidKind::OnlineSoftmax)
    return ShapeClass::OnlineSoftmax;

  // The reductions that decide the class: the comprehension itself if it
  // reduces, else the reductions at the top of its body.
  SmallVector<ComprehensionOp> reductions;
  if (op.getNumReduced())
    reductions.push_back(op);
  else
    for (Operation &nested : op.getBodyBlock())
      if (auto c = dyn_cast<ComprehensionOp>(nested))
        reductions.push_back(c);
  if (reductions.empty())
    return ShapeClass::Pointwise;

  for (ComprehensionOp red : reductions)
    if (std::optional<ShapeClass> c = classifyContraction(op, red))
      return *c;

  // Where do reduced indices sit in the coordinates of the reads they
  // drive: the innermost coordinate (a row) or an outer one (a column)?
  // Reads of the reduced indices alone (a per-row statistic broadcast
  // along the columns: the norm's rsqrt in its weight's gradient) are
  // small beside those of the parallel ones and do not decide, unless no
  // read uses a parallel index.
  auto usesParallel = [&](ReadOp read) {
    return llvm::any_of(llvm::enumerate(read.getIndices()), [&](auto p) {
      auto arg = dyn_cast<BlockArgument>(p.value());
      return arg && arg.getOwner() == &op.getBodyBlock() &&
             arg.getArgNumber() < op.getNumParallel() &&
             read.getMap().isFunctionOfDim(p.index());
    });
  };
  bool anyParallel = false;
  op.walk([&](ReadOp read) { anyParallel |= usesParallel(read); });
  bool inner = false, outer = false;
  op.walk([&](ReadOp read) {
    AffineMap map = read.getMap();
    if (map.getNumResults() == 0 || (anyParallel && !usesParallel(read)))
      return;
    for (auto [pos, v] : llvm::enumerate(read.getIndices())) {
      ComprehensionOp owner = getOwningComprehension(v);
      if (!owner ||
          !owner.isReducedIndex(cast<BlockArgument>(v).getArgNumber()))
        continue;
      if (map.getResults().back().isFunctionOfDim(pos))
        inner = true;
      else
        outer = true;
    }
  });
  if (outer && !inner)
    return ShapeClass::ColumnReduction;
  return ShapeClass::RowReduction;
}

/// Whether `red` reduces with add, max or min over values computed in f32
/// (f32, f16 or bf16): a carrier that a warp combines by 32-bit shuffles.
static bool hasWarpCarrier(ComprehensionOp red) {
  std::optional<MonoidKind> kind = red.getBuiltinMonoid();
  if (!kind || (*kind != MonoidKind::Add && *kind != MonoidKind::Max &&
                *kind != MonoidKind::Min))
    return false;
  return llvm::all_of(red.getYield().getValues().getTypes(), [](Type t) {
    return t.isF32() || t.isF16() || t.isBF16();
  });
}

bool mlir::tang::isMatVecForm(ComprehensionOp op) {
  unsigned np = op.getNumParallel();
  if (np == 0 || classifyComprehension(op) != ShapeClass::NarrowMatVec)
    return false;
  // Only the output index may be symbolic (a grid stride covers it).
  bool otherSymbolic = false;
  op.walk([&](ComprehensionOp c) {
    for (unsigned i = 0; i < c.getNumIndices(); ++i)
      otherSymbolic |= c.isSymbolicExtent(i) && !(c == op && i == np - 1);
  });
  // Tensors of static shapes only (a `?` tensor is a flat buffer in the
  // kernel, which the vector loads do not index).
  op.walk([&](Operation *r) {
    if (isa<ReadOp, GatherOp>(r))
      otherSymbolic |= !cast<RankedTensorType>(getAccessedTensor(r).getType())
                            .hasStaticShape();
  });
  if (otherSymbolic)
    return false;
  Value n = op.getIndex(np - 1);
  auto readsRowOf = [&](ComprehensionOp red) {
    bool found = false;
    red.walk([&](Operation *r) {
      found |= isa<ReadOp, GatherOp>(r) && accessUses(r, n);
    });
    return found;
  };
  if (op.getNumReduced())
    return op.getNumReduced() == 1 && hasWarpCarrier(op) && readsRowOf(op);
  Block &body = op.getBodyBlock();
  bool any = false;
  for (Operation &inner : body) {
    auto red = dyn_cast<ComprehensionOp>(inner);
    if (!red)
      continue;
    any = true;
    if (red.getNumParallel() != 0 || red.getNumReduced() != 1 ||
        !hasWarpCarrier(red) || !readsRowOf(red))
      return false;
    // Its body uses `op`'s indices and values from outside `op` only.
    WalkResult uses = red.walk([&](Operation *o) {
      for (Value v : o->getOperands())
        if (v.getParentBlock() == &body && !isa<BlockArgument>(v))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (uses.wasInterrupted())
      return false;
  }
  return any;
}
