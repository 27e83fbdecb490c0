//===- KernelMatchers.cpp - what the tensor-core kernels match --*- C++ -*-===//
//
// See KernelMatchers.h. Moved out of the emitters (MmaKernel, FlashKernel,
// ScoreKernel), which now only build.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

/// The index values a coordinate expression of `read` uses.
static SmallVector<Value> getCoordinateIndices(ReadOp read, unsigned coord) {
  SmallVector<Value> used;
  AffineExpr e = read.getMap().getResult(coord);
  for (auto [pos, v] : llvm::enumerate(read.getIndices()))
    if (e.isFunctionOfDim(pos))
      used.push_back(v);
  return used;
}

bool mlir::tang::isSumOfMultiples(AffineExpr e, int64_t m) {
  // Not AffineExpr::isMultipleOf: it counts (8 h) floordiv 16 as a
  // multiple of 8.
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue() % m == 0;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return false;
  if (bin.getKind() == AffineExprKind::Add)
    return isSumOfMultiples(bin.getLHS(), m) &&
           isSumOfMultiples(bin.getRHS(), m);
  if (bin.getKind() == AffineExprKind::Mul)
    return isSumOfMultiples(bin.getLHS(), m) ||
           isSumOfMultiples(bin.getRHS(), m);
  return false;
}

/// Whether `e` is dimension `pos` plus terms without it that are
/// multiples of 8 (a head offset h * 64 + d, say).
static bool isUnitPlusAligned(AffineExpr e, unsigned pos, unsigned numDims) {
  MLIRContext *ctx = e.getContext();
  AffineExpr dim = getAffineDimExpr(pos, ctx);
  AffineExpr rest = simplifyAffineExpr(
      e.replace(dim, getAffineConstantExpr(0, ctx)), numDims, 0);
  return simplifyAffineExpr(e - rest, numDims, 0) == dim &&
         isSumOfMultiples(rest, 8);
}

bool mlir::tang::isContiguousIn(ReadOp read, Value v) {
  AffineMap map = read.getMap();
  auto it = llvm::find(read.getIndices(), v);
  if (it == read.getIndices().end() || map.getNumResults() == 0)
    return false;
  unsigned pos = it - read.getIndices().begin();
  unsigned n = map.getNumResults(), numDims = map.getNumDims();
  auto t = cast<RankedTensorType>(read.getTensor().getType());
  if (t.getShape().back() % 8 != 0)
    return false;
  // The coordinates the index may appear in: the last one (i + 8k), or the
  // last two as (e floordiv S, e mod S) over a last dimension of S (a
  // reshape view: 8-aligned runs of e stay within one row of S).
  unsigned first;
  if (isUnitPlusAligned(map.getResult(n - 1), pos, numDims)) {
    first = n - 1;
  } else {
    auto fl = dyn_cast<AffineBinaryOpExpr>(n >= 2 ? map.getResult(n - 2)
                                                  : AffineExpr());
    auto md = dyn_cast<AffineBinaryOpExpr>(map.getResult(n - 1));
    if (!fl || !md || fl.getKind() != AffineExprKind::FloorDiv ||
        md.getKind() != AffineExprKind::Mod || fl.getLHS() != md.getLHS() ||
        fl.getRHS() != md.getRHS())
      return false;
    auto s = dyn_cast<AffineConstantExpr>(fl.getRHS());
    if (!s || s.getValue() % 8 != 0 || t.getShape().back() != s.getValue() ||
        !isUnitPlusAligned(fl.getLHS(), pos, numDims))
      return false;
    first = n - 2;
  }
  for (unsigned r = 0; r < first; ++r)
    if (map.getResult(r).isFunctionOfDim(pos))
      return false;
  return true;
}

bool mlir::tang::readUses(ReadOp read, Value v) {
  for (unsigned r = 0; r < read.getMap().getNumResults(); ++r)
    if (llvm::is_contained(getCoordinateIndices(read, r), v))
      return true;
  return false;
}

Value mlir::tang::stripExtensions(Value v) {
  while (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return v;
}

/// Whether `e` uses dimension `pos` (d) only as `d floordiv c` with `c` a
/// multiple of `v`: constant over runs of `v` values of d that start at
/// multiples of `v`.
static bool isConstantOverRuns(AffineExpr e, unsigned pos, int64_t v) {
  if (!e.isFunctionOfDim(pos))
    return true;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return false; // d itself.
  auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
  if (bin.getKind() == AffineExprKind::FloorDiv && c && c.getValue() > 0 &&
      c.getValue() % v == 0 &&
      bin.getLHS() == getAffineDimExpr(pos, e.getContext()))
    return true;
  if (bin.getKind() == AffineExprKind::FloorDiv ||
      bin.getKind() == AffineExprKind::Mod ||
      bin.getKind() == AffineExprKind::CeilDiv)
    return false;
  return isConstantOverRuns(bin.getLHS(), pos, v) &&
         isConstantOverRuns(bin.getRHS(), pos, v);
}

/// Whether an access at `map(indices)` of a tensor of type `type` can be
/// loaded `v` elements at a time along `row`, from a multiple of `v`: its
/// last coordinate is the row index plus multiples of `v` (no data), or the
/// row index modulo a multiple of `v` (a row of heads read as one:
/// o[(k floordiv 128), k mod 128]); its other coordinates do not change
/// over such runs (data coordinates are the caller's to check); and rows
/// of its tensor start at multiples of `v` elements.
static bool isVectorizableAccess(AffineMap map, OperandRange indices,
                                 RankedTensorType type, Value row, int64_t v) {
  // A tensor with a `?` dimension is a flat buffer indexed through the
  // sizes.
  if (map.getNumResults() == 0 || !type.hasStaticShape() ||
      type.getShape().back() % v != 0)
    return false;
  auto pos = llvm::find(indices, row) - indices.begin();
  if (pos == static_cast<long>(indices.size()))
    return false;
  // The last coordinate is the row index plus terms that are multiples of
  // v (a column offset: SwiGLU's gate reads columns f and ffn + f).
  AffineExpr dim =
      getAffineDimExpr(static_cast<unsigned>(pos), map.getContext());
  AffineExpr last = map.getResults().back();
  bool data = false;
  last.walk([&](AffineExpr e) { data |= isa<AffineSymbolExpr>(e); });
  if (data)
    return false;
  AffineExpr rest = simplifyAffineExpr(
      last.replace(dim, getAffineConstantExpr(0, map.getContext())),
      map.getNumDims(), map.getNumSymbols());
  bool offset = simplifyAffineExpr(last - rest, map.getNumDims(),
                                   map.getNumSymbols()) == dim &&
                isSumOfMultiples(rest, v);
  auto bin = dyn_cast<AffineBinaryOpExpr>(last);
  auto modulus =
      bin ? dyn_cast<AffineConstantExpr>(bin.getRHS()) : AffineConstantExpr();
  bool wrapped = bin && bin.getKind() == AffineExprKind::Mod &&
                 bin.getLHS() == dim && modulus && modulus.getValue() > 0 &&
                 modulus.getValue() % v == 0;
  if (!offset && !wrapped)
    return false;
  return llvm::all_of(map.getResults().drop_back(), [&](AffineExpr e) {
    return isConstantOverRuns(e, static_cast<unsigned>(pos), v);
  });
}

bool mlir::tang::isVectorizable(ReadOp read, Value row, int64_t v) {
  // A padded read is guarded per element.
  return !read.getFill() &&
         isVectorizableAccess(
             read.getMap(), read.getIndices(),
             cast<RankedTensorType>(read.getTensor().getType()), row, v);
}

bool mlir::tang::isVectorizable(GatherOp gather, Value row, int64_t v) {
  // Trap is refused by the kernels; a data coordinate that changes along
  // the row is a different row per element.
  if (gather.getPolicy() == OutOfRange::Trap)
    return false;
  Block *scope = gather->getBlock();
  for (Value data : gather.getValues())
    if (dependsOn(data, row, *scope))
      return false;
  return isVectorizableAccess(
      gather.getMap(), gather.getIndices(),
      cast<RankedTensorType>(gather.getTensor().getType()), row, v);
}

Value mlir::tang::getAccessedTensor(Operation *access) {
  if (auto read = dyn_cast<ReadOp>(access))
    return read.getTensor();
  return cast<GatherOp>(access).getTensor();
}

bool mlir::tang::accessUses(Operation *access, Value index, Block *scope) {
  if (auto gather = dyn_cast<GatherOp>(access); gather && scope)
    for (Value data : gather.getValues())
      if (dependsOn(data, index, *scope))
        return true;
  auto read = dyn_cast<ReadOp>(access);
  auto gather = dyn_cast<GatherOp>(access);
  AffineMap map = read ? read.getMap() : gather.getMap();
  OperandRange indices = read ? read.getIndices() : gather.getIndices();
  for (auto [pos, v] : llvm::enumerate(indices))
    if (v == index && map.isFunctionOfDim(pos))
      return true;
  return false;
}

std::optional<RowlessWork> mlir::tang::getRowlessWork(ComprehensionOp op) {
  constexpr int64_t kMinRowlessLength = 1024;
  unsigned np = op.getNumParallel();
  if (np == 0 || op.getNumReduced())
    return std::nullopt;
  Value last = op.getIndex(np - 1);
  RowlessWork work{0, 16};
  bool usesLast = false;
  for (Operation &o : op.getBodyBlock()) {
    auto nested = dyn_cast<ComprehensionOp>(o);
    if (!nested)
      continue;
    if (nested.getNumIndices() != 1 || nested.getNumReduced() != 1 ||
        nested.isSymbolicExtent(0))
      return std::nullopt;
    int64_t extent = nested.getExtent(0);
    work.length = std::max(work.length, extent);
    nested.getBodyBlock().walk([&](ReadOp r) {
      usesLast |= llvm::is_contained(r.getIndices(), last);
      if (!llvm::is_contained(r.getIndices(), nested.getIndex(0)))
        return;
      // Reads along the reduction are loaded 16 bytes at a time, in
      // vectors that divide its extent.
      Type e = cast<RankedTensorType>(r.getTensor().getType()).getElementType();
      int64_t v = 16 / std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
      while (v > 1 && extent % v != 0)
        v /= 2;
      work.vector = std::min(work.vector, v);
    });
  }
  if (!usesLast || work.length < kMinRowlessLength)
    return std::nullopt;
  return work;
}

/// Whether `v` depends on `index` (through operands and nested bodies).
bool mlir::tang::dependsOn(Value v, Value index, Block &scope) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (cur == index)
      return true;
    if (!seen.insert(cur).second)
      continue;
    Operation *def = cur.getDefiningOp();
    if (!def || !scope.getParentOp()->isAncestor(def))
      continue;
    for (Value o : def->getOperands())
      work.push_back(o);
    def->walk([&](Operation *inner) {
      for (Value o : inner->getOperands())
        work.push_back(o);
    });
  }
  return false;
}

/// The leaves of the product tree rooted at `v` (through mulf and extf).
void mlir::tang::getFactors(Value v, SmallVectorImpl<Value> &leaves) {
  v = stripExtensions(v);
  if (auto mul = v.getDefiningOp<arith::MulFOp>()) {
    getFactors(mul.getLhs(), leaves);
    getFactors(mul.getRhs(), leaves);
    return;
  }
  leaves.push_back(v);
}

bool mlir::tang::readsSixteenBitTensors(ComprehensionOp op) {
  bool found = false;
  op.walk([&](ReadOp r) {
    Type e = cast<RankedTensorType>(r.getTensor().getType()).getElementType();
    found |= e.isF16() || e.isBF16();
  });
  return found;
}

bool mlir::tang::hasPaddedRead(ComprehensionOp op) {
  return op
      .walk([](ReadOp r) {
        return r.getFill() ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

std::optional<MmaContraction>
mlir::tang::matchMmaContraction(ComprehensionOp op, std::string &why,
                                bool allowTransposedA, bool allowTf32) {
  auto fail = [&](const Twine &reason) -> std::optional<MmaContraction> {
    why = reason.str();
    return std::nullopt;
  };
  if (op.getNumResults() != 1 || op.getNumParallel() < 2)
    return fail("needs one result with at least two parallel indices");
  MmaContraction c;
  if (op.getNumReduced() == 1) {
    c.red = op;
  } else if (op.getNumReduced() == 0) {
    for (Operation &inner : op.getBodyBlock()) {
      auto nested = dyn_cast<ComprehensionOp>(inner);
      if (!nested)
        continue;
      if (c.red)
        return fail("the body holds more than one nested comprehension");
      c.red = nested;
    }
    if (!c.red)
      return fail("no reduction");
    if (c.red.getNumParallel() != 0 || c.red.getNumReduced() != 1 ||
        c.red.getNumResults() != 1)
      return fail("the nested reduction is not over one index");
  } else {
    return fail("reduces over more than one index");
  }
  if (c.red.getBuiltinMonoid() != MonoidKind::Add)
    return fail("the reduction's monoid is not add");
  auto isTensorCoreResult = [](Type t) {
    return t.isF32() || t.isF16() || t.isBF16();
  };
  if (!isTensorCoreResult(getElementTypeOrSelf(c.red.getResultTypes()[0])) ||
      !isTensorCoreResult(getElementTypeOrSelf(op.getResultTypes()[0])))
    return fail("the sum or the result is not f32, f16 or bf16");

  // The summand: a product of two reads (possibly widened; the product
  // possibly narrowed to the sum's type, which the tensor cores' f32
  // accumulation subsumes), nothing else.
  Block &body = c.red.getBodyBlock();
  Value summand = c.red.getYield().getValues()[0];
  if (auto trunc = summand.getDefiningOp<arith::TruncFOp>())
    summand = trunc.getIn();
  auto mul = stripExtensions(summand).getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != &body)
    return fail("the summand is not a product");
  c.a = stripExtensions(mul.getLhs()).getDefiningOp<ReadOp>();
  c.b = stripExtensions(mul.getRhs()).getDefiningOp<ReadOp>();
  if (!c.a || !c.b)
    return fail("the product's factors are not reads");
  for (Operation &inner : body.without_terminator())
    if (!isa<ReadOp, arith::ExtFOp, arith::MulFOp, arith::TruncFOp>(inner))
      return fail("the summand holds more than a product of two reads");
  Type ta = cast<RankedTensorType>(c.a.getTensor().getType()).getElementType();
  Type tb = cast<RankedTensorType>(c.b.getTensor().getType()).getElementType();
  if (ta != tb || !(ta.isF16() || ta.isBF16() || (allowTf32 && ta.isF32())))
    return fail(allowTf32 ? "the operands are not both f16, both bf16 or "
                            "both f32"
                          : "the operands are not both f16 or both bf16");
  // tf32 runs on mma.sync, which takes A contiguous in k only.
  if (ta.isF32())
    allowTransposedA = false;
  c.elementType = ta;

  Value k = c.red.getIndex(c.red.getNumIndices() - 1);
  c.extentK = c.red.getExtent(c.red.getNumIndices() - 1);
  // m: the last parallel index only `a` uses; n: the last parallel index of
  // `op`, used by `b` only.
  c.n = op.getNumParallel() - 1;
  Value n = op.getIndex(c.n);
  // The product may be written b * a: the right operand is the one that
  // uses the column index.
  if (readUses(c.a, n) && !readUses(c.b, n))
    std::swap(c.a, c.b);
  if (!readUses(c.b, n) || readUses(c.a, n))
    return fail("the last parallel index is not used by the right operand "
                "only");
  std::optional<unsigned> m;
  for (unsigned i = 0; i < c.n; ++i)
    if (readUses(c.a, op.getIndex(i)) && !readUses(c.b, op.getIndex(i)))
      m = i;
  if (!m)
    return fail("no parallel index is used by the left operand only");
  c.m = *m;
  c.extentM = op.getExtent(c.m);
  c.extentN = op.getExtent(c.n);

  c.aKContiguous = true;
  if (!isContiguousIn(c.a, k)) {
    if (!allowTransposedA || !isContiguousIn(c.a, op.getIndex(c.m)))
      return fail(Twine("the left operand is not contiguous in the reduced "
                        "index") +
                  (allowTransposedA ? " nor in the row index" : "") +
                  " (its last coordinate must be the index, rows a multiple "
                  "of 8 elements)");
    c.aKContiguous = false;
  }
  if (isContiguousIn(c.b, k))
    c.bKContiguous = true;
  else if (isContiguousIn(c.b, n))
    c.bKContiguous = false;
  else
    return fail("the right operand is contiguous in neither the reduced nor "
                "the column index");
  if (c.extentK <= 0 || c.extentM <= 0 || c.extentN <= 0)
    return fail("an extent is zero");
  if (c.extentK % 8 != 0 || (!c.bKContiguous && c.extentN % 8 != 0) ||
      (!c.aKContiguous && c.extentM % 8 != 0))
    return fail("a contiguous extent is not a multiple of 8");

  // The grid: batch points over z, row tiles over y (at most 65535 each;
  // rows of 64 at the least).
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != c.m && p != c.n)
      batchCount *= op.getExtent(p);
  if (batchCount > 65535 || llvm::divideCeil(c.extentM, 32) > 65535)
    return fail("more batch points or row tiles than the grid holds");

  // The epilogue: scalar code only.
  if (c.red != op) {
    for (Operation &inner : op.getBodyBlock())
      if (&inner != c.red.getOperation() && inner.getNumRegions())
        return fail("the epilogue holds an operation with regions");
  }
  return c;
}

std::optional<unsigned>
mlir::tang::getBoxRowCoordinate(ReadOp read, Value row, Value col,
                                function_ref<bool(Value)> isBatch) {
  MLIRContext *ctx = read.getContext();
  AffineMap map = read.getMap();
  unsigned rank = map.getNumResults(), numDims = map.getNumDims();
  if (rank < 2 || rank > 5)
    return std::nullopt;
  auto position = [&](Value v) -> std::optional<unsigned> {
    auto it = llvm::find(read.getIndices(), v);
    if (it == read.getIndices().end())
      return std::nullopt;
    return it - read.getIndices().begin();
  };
  std::optional<unsigned> rowPos = position(row), colPos = position(col);
  if (!rowPos || !colPos)
    return std::nullopt;
  // Whether `e` uses batch indices only, besides index `pos` (if given).
  auto onlyBatch = [&](AffineExpr e, std::optional<unsigned> pos) {
    for (auto [p, v] : llvm::enumerate(read.getIndices()))
      if (p != pos && e.isFunctionOfDim(p) && !isBatch(v))
        return false;
    return true;
  };
  // `e` is index `pos` plus batch terms.
  auto isUnitPlusBatch = [&](AffineExpr e, unsigned pos) {
    AffineExpr dim = getAffineDimExpr(pos, ctx);
    AffineExpr rest = simplifyAffineExpr(
        e.replace(dim, getAffineConstantExpr(0, ctx)), numDims, 0);
    return simplifyAffineExpr(e - rest, numDims, 0) == dim &&
           onlyBatch(rest, std::nullopt);
  };
  if (!isUnitPlusBatch(map.getResult(rank - 1), *colPos))
    return std::nullopt;
  std::optional<unsigned> rowCoord;
  for (unsigned r = 0; r + 1 < rank; ++r) {
    AffineExpr e = map.getResult(r);
    if (!e.isFunctionOfDim(*rowPos)) {
      if (!onlyBatch(e, std::nullopt))
        return std::nullopt;
      continue;
    }
    if (rowCoord || !isUnitPlusBatch(e, *rowPos))
      return std::nullopt;
    rowCoord = r;
  }
  return rowCoord;
}

std::optional<int64_t> mlir::tang::getIndexOffset(Value v, Value index) {
  auto idx = v.getDefiningOp<IndexOp>();
  if (!idx || idx.getMap().getNumResults() != 1)
    return std::nullopt;
  AffineExpr e = idx.getMap().getResult(0);
  int64_t offset = 0;
  if (auto sum = dyn_cast<AffineBinaryOpExpr>(e);
      sum && sum.getKind() == AffineExprKind::Add) {
    auto c = dyn_cast<AffineConstantExpr>(sum.getRHS());
    if (!c)
      return std::nullopt;
    offset = c.getValue();
    e = sum.getLHS();
  }
  auto dim = dyn_cast<AffineDimExpr>(e);
  if (!dim || idx.getIndices()[dim.getPosition()] != index)
    return std::nullopt;
  return offset;
}

std::optional<int64_t> mlir::tang::getKeyLimit(Value score, Value i, Value j,
                                               int64_t extentI,
                                               int64_t extentJ) {
  auto sel = score.getDefiningOp<arith::SelectOp>();
  if (!sel)
    return std::nullopt;
  auto inf = sel.getFalseValue().getDefiningOp<arith::ConstantOp>();
  auto fa = inf ? dyn_cast<FloatAttr>(inf.getValue()) : FloatAttr();
  if (!fa || !fa.getValue().isInfinity() || !fa.getValue().isNegative())
    return std::nullopt;
  auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return std::nullopt;
  arith::CmpIPredicate pred = cmp.getPredicate();
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  // Normalise to the j side on the left (x >= y is y <= x).
  if (getIndexOffset(lhs, i)) {
    std::swap(lhs, rhs);
    using P = arith::CmpIPredicate;
    switch (pred) {
    case P::sge:
      pred = P::sle;
      break;
    case P::sgt:
      pred = P::slt;
      break;
    case P::uge:
      pred = P::ule;
      break;
    case P::ugt:
      pred = P::ult;
      break;
    default:
      return std::nullopt;
    }
  }
  std::optional<int64_t> a = getIndexOffset(lhs, j), b = getIndexOffset(rhs, i);
  if (!a || !b)
    return std::nullopt;
  // The comparison must be exact integer arithmetic over the domain: both
  // sides fit the index type signed (no wrap), and an unsigned comparison
  // only with both sides non-negative.
  unsigned width = lhs.getType().getIntOrFloatBitWidth();
  int64_t bound = std::max(extentI, extentJ) + std::abs(*a) + std::abs(*b);
  if (width < 64 && bound >= (int64_t(1) << (width - 1)))
    return std::nullopt;
  bool isUnsigned =
      pred == arith::CmpIPredicate::ule || pred == arith::CmpIPredicate::ult;
  if (isUnsigned && (*a < 0 || *b < 0))
    return std::nullopt;
  switch (pred) {
  case arith::CmpIPredicate::sle:
  case arith::CmpIPredicate::ule:
    return *b - *a;
  case arith::CmpIPredicate::slt:
  case arith::CmpIPredicate::ult:
    return *b - *a - 1;
  default:
    return std::nullopt;
  }
}

bool mlir::tang::sameValue(Value a, Value b, IRMapping &indices,
                           llvm::DenseMap<Value, Value> &known) {
  if (Value m = indices.lookupOrNull(a))
    return m == b;
  if (auto it = known.find(a); it != known.end())
    return it->second == b;
  Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
  if (!da || !db || da->getNumResults() != db->getNumResults() ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber())
    return a == b;
  bool same = OperationEquivalence::isEquivalentTo(
      da, db,
      [&](Value x, Value y) {
        return success(sameValue(x, y, indices, known));
      },
      [&](Value x, Value y) { indices.map(x, y); },
      OperationEquivalence::IgnoreLocations);
  if (same)
    for (auto [x, y] : llvm::zip(da->getResults(), db->getResults()))
      known[x] = y;
  return same;
}

//===----------------------------------------------------------------------===//
// The composition of affine maps: (A1, B1) * (A2, B2) = (A2 A1, A2 B1 + B2)
//===----------------------------------------------------------------------===//

namespace {

/// One term of a combine's yielded tensor: an argument read in place, or
/// the product of two arguments (`lhs[i, k] * rhs[k, j]` summed over k).
struct Term {
  bool product;
  unsigned lhs, rhs;
  bool operator<(const Term &o) const {
    return std::tie(product, lhs, rhs) < std::tie(o.product, o.lhs, o.rhs);
  }
  bool operator==(const Term &o) const {
    return std::tie(product, lhs, rhs) == std::tie(o.product, o.lhs, o.rhs);
  }
};

/// Whether `read` reads its tensor at exactly `indices` (identity map).
bool readsAt(ReadOp read, ArrayRef<Value> indices) {
  return read && !read.getFill() && read.getMap().isIdentity() &&
         llvm::equal(read.getIndices(), indices);
}

/// The argument number of `v` in the combine block `combine`, if it is one.
std::optional<unsigned> argNumber(Value v, Block &combine) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &combine)
    return std::nullopt;
  return arg.getArgNumber();
}

/// A product term from `v = x[i, k] * y[k, j]` (either order of the
/// operands), x and y arguments of the combine.
std::optional<Term> matchProduct(Value v, Value i, Value j, Value k,
                                 Block &combine) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto ra = a.getDefiningOp<ReadOp>(), rb = b.getDefiningOp<ReadOp>();
    if (!readsAt(ra, {i, k}) || !readsAt(rb, {k, j}))
      continue;
    auto x = argNumber(ra.getTensor(), combine);
    auto y = argNumber(rb.getTensor(), combine);
    if (x && y)
      return Term{true, *x, *y};
  }
  return std::nullopt;
}

LogicalResult collectTensorTerms(Value tensor, Block &combine,
                                 SmallVectorImpl<Term> &terms);

/// The terms of the scalar `v` of a body at the matrix point (i, j).
LogicalResult collectScalarTerms(Value v, Value i, Value j, Block &combine,
                                 SmallVectorImpl<Term> &terms) {
  if (auto add = v.getDefiningOp<arith::AddFOp>())
    return success(
        succeeded(collectScalarTerms(add.getLhs(), i, j, combine, terms)) &&
        succeeded(collectScalarTerms(add.getRhs(), i, j, combine, terms)));
  if (auto read = v.getDefiningOp<ReadOp>()) {
    if (!readsAt(read, {i, j}))
      return failure();
    return collectTensorTerms(read.getTensor(), combine, terms);
  }
  // A nested sum over k of x[i, k] * y[k, j].
  auto nested = v.getDefiningOp<ComprehensionOp>();
  if (!nested || nested.getNumParallel() != 0 || nested.getNumReduced() != 1 ||
      nested.getNumResults() != 1 ||
      nested.getBuiltinMonoid() != MonoidKind::Add)
    return failure();
  std::optional<Term> t =
      matchProduct(nested.getYield().getValues()[0], i, j,
                   nested.getBodyBlock().getArgument(0), combine);
  if (!t)
    return failure();
  terms.push_back(*t);
  return success();
}

/// The terms of a tensor of the combine: an argument, or a comprehension
/// over (i, j) of the combine's block.
LogicalResult collectTensorTerms(Value tensor, Block &combine,
                                 SmallVectorImpl<Term> &terms) {
  if (auto n = argNumber(tensor, combine)) {
    terms.push_back(Term{false, *n, 0});
    return success();
  }
  auto c = tensor.getDefiningOp<ComprehensionOp>();
  if (!c || c->getBlock() != &combine || c.getNumResults() != 1 ||
      c.getNumParallel() != 2)
    return failure();
  Block &body = c.getBodyBlock();
  Value i = body.getArgument(0), j = body.getArgument(1);
  Value y = c.getYield().getValues()[0];
  if (c.getNumReduced() == 0)
    return collectScalarTerms(y, i, j, combine, terms);
  if (c.getNumReduced() != 1 || c.getBuiltinMonoid() != MonoidKind::Add)
    return failure();
  std::optional<Term> t = matchProduct(y, i, j, body.getArgument(2), combine);
  if (!t)
    return failure();
  terms.push_back(*t);
  return success();
}

} // namespace

bool mlir::tang::isAffineComposition(MonoidOp monoid) {
  SmallVector<Type> carrier = monoid.getCarrierTypes();
  if (carrier.size() != 2)
    return false;
  auto a = dyn_cast<RankedTensorType>(carrier[0]);
  auto b = dyn_cast<RankedTensorType>(carrier[1]);
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2 ||
      a.getDimSize(0) != a.getDimSize(1) ||
      b.getDimSize(0) != a.getDimSize(0) ||
      a.getElementType() != b.getElementType() ||
      !isa<Float32Type, Float64Type>(a.getElementType()))
    return false;
  Block &combine = monoid.getCombine().front();
  auto yield = cast<YieldOp>(combine.getTerminator());
  // Arguments: a1 = 0, b1 = 1, a2 = 2, b2 = 3.
  SmallVector<Term> ta, tb;
  if (failed(collectTensorTerms(yield.getValues()[0], combine, ta)) ||
      failed(collectTensorTerms(yield.getValues()[1], combine, tb)))
    return false;
  llvm::sort(tb);
  return ta.size() == 1 && ta[0] == Term{true, 2, 0} &&
         tb == SmallVector<Term>{Term{false, 3, 0}, Term{true, 2, 1}};
}
