//===- AttentionMatchers.cpp - attention-shaped reductions ------*- C++ -*-===//

#include "Tang/Analysis/AttentionMatchers.h"
#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The summand of dot product `red` (nested in `op`'s body) as q(e) k(j, e)
/// times factors that depend on no index: the two reads of its index `e`
/// (`k` the one that reads key index `j`) and the other factors; false with
/// `why` set otherwise.
bool matchDotFactors(ComprehensionOp op, ComprehensionOp red, Value j,
                     ReadOp &q, ReadOp &k, SmallVectorImpl<Value> &factors,
                     std::string &why) {
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return false;
  };
  Block &redBody = red.getBodyBlock();
  Value e = red.getIndex(0);
  q = k = {};
  SmallVector<Value> leaves;
  getFactors(red.getYield().getValues()[0], leaves);
  for (Value leaf : leaves) {
    auto read = leaf.getDefiningOp<ReadOp>();
    if (read && readUses(read, e)) {
      if (!q)
        q = read;
      else if (!k)
        k = read;
      else
        return fail("the summand has more than two reads of the index");
      continue;
    }
    if (dependsOn(leaf, e, redBody))
      return fail("a factor of the summand depends on the reduced index");
    for (unsigned p = 0; p < op.getNumIndices(); ++p)
      if (dependsOn(leaf, op.getIndex(p), redBody))
        return fail("a factor of the summand depends on an index");
    factors.push_back(leaf);
  }
  if (!q || !k)
    return fail("the summand is not a product of two reads");
  if (readUses(q, j))
    std::swap(q, k);
  if (readUses(q, j) || !readUses(k, j))
    return fail("the key index is not read by exactly one factor");
  return true;
}

/// The one comprehension nested in `body`: null with `why` set when there
/// are none or several.
ComprehensionOp getOnlyNestedReduction(Block &body, std::string &why) {
  ComprehensionOp red;
  for (Operation &inner : body.without_terminator()) {
    auto nested = dyn_cast<ComprehensionOp>(inner);
    if (!nested)
      continue;
    if (red) {
      why = "more than one nested reduction";
      return {};
    }
    red = nested;
  }
  if (!red)
    why = "the score is not a dot product";
  return red;
}

/// The operations of `op`'s body that compute its score: every one but
/// the nested reduction `red` and the value's chain (the second yield's
/// extensions back to its read). False with `why` set when one of them
/// depends on value column `d`.
bool collectScoreOps(ComprehensionOp op, ComprehensionOp red, Value d,
                     SmallVectorImpl<Operation *> &scoreOps, std::string &why) {
  Block &body = op.getBodyBlock();
  llvm::SetVector<Operation *> valueOps;
  for (Value cur = op.getYield().getValues()[1];
       Operation *def = cur.getDefiningOp();) {
    valueOps.insert(def);
    if (isa<ReadOp>(def))
      break;
    // A masked value (SplitSoftmaxKeyLimit): its condition is the score's.
    auto sel = dyn_cast<arith::SelectOp>(def);
    cur = sel ? sel.getTrueValue() : def->getOperand(0);
  }
  for (Operation &inner : body.without_terminator()) {
    if (&inner == red.getOperation() || valueOps.contains(&inner))
      continue;
    for (Value r : inner.getResults())
      if (dependsOn(r, d, body)) {
        why = "the score depends on the value column";
        return false;
      }
    scoreOps.push_back(&inner);
  }
  return true;
}

} // namespace

std::optional<FlashMatch>
mlir::tang::matchFlash(ComprehensionOp op, std::string &why, bool tensorCores) {
  auto fail = [&](const Twine &reason) -> std::optional<FlashMatch> {
    why = reason.str();
    return std::nullopt;
  };
  if (op.getBuiltinMonoid() != MonoidKind::OnlineSoftmax ||
      op.getNumReduced() != 1 || op.getNumParallel() < 2 ||
      op.getNumResults() != 1)
    return fail("not a one-index online-softmax reduction");
  FlashMatch m;
  m.d = op.getNumParallel() - 1;
  m.j = op.getIndex(op.getNumParallel());
  m.lk = op.getExtent(op.getNumParallel());
  Value d = op.getIndex(m.d);
  Block &body = op.getBodyBlock();
  ValueRange yields = op.getYield().getValues();
  m.score = yields[0];
  m.v = stripExtensions(yields[1]).getDefiningOp<ReadOp>();
  // (The SIMT kernel reads any layout: contiguity is the tensor cores'
  // 16-byte copies.)
  if (!m.v || (tensorCores && !isContiguousIn(m.v, d)) || !readUses(m.v, m.j))
    return fail("the value is not a read contiguous in the last index");

  m.red = getOnlyNestedReduction(body, why);
  if (!m.red)
    return std::nullopt;
  if (m.red.getBuiltinMonoid() != MonoidKind::Add ||
      m.red.getNumReduced() != 1 || m.red.getNumParallel() != 0)
    return fail("the score is not a dot product");
  Value e = m.red.getIndex(0);
  m.dqk = m.red.getExtent(0);
  if (!matchDotFactors(op, m.red, m.j, m.q, m.k, m.factors, why))
    return std::nullopt;
  // The query index: the parallel index q uses and k does not.
  std::optional<unsigned> qi;
  for (unsigned p = 0; p < m.d; ++p)
    if (readUses(m.q, op.getIndex(p)) && !readUses(m.k, op.getIndex(p)))
      qi = p;
  if (!qi)
    return fail("no query index");
  m.i = *qi;
  // Keys and values are shared by the block's query rows.
  if (readUses(m.v, op.getIndex(m.i)))
    return fail("the value depends on the query index");
  if (tensorCores && (!isContiguousIn(m.q, e) || !isContiguousIn(m.k, e)))
    return fail("the dot product's operands are not contiguous in its index");

  Type tq = cast<RankedTensorType>(m.q.getTensor().getType()).getElementType();
  if (tensorCores) {
    for (ReadOp r : {m.k, m.v})
      if (cast<RankedTensorType>(r.getTensor().getType()).getElementType() !=
          tq)
        return fail("the operands' element types differ");
    if (!tq.isF16() && !tq.isBF16())
      return fail("the operands are not f16 or bf16");
  } else {
    for (ReadOp r : {m.q, m.k, m.v}) {
      Type t = cast<RankedTensorType>(r.getTensor().getType()).getElementType();
      if (!t.isF16() && !t.isBF16() && !t.isF32())
        return fail("the operands are not f16, bf16 or f32");
    }
  }
  m.elementType = tq;
  m.lq = op.getExtent(m.i);
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != m.i && p != m.d)
      batchCount *= op.getExtent(p);
  if (batchCount > 65535)
    return fail("more batch points than the grid holds");
  m.dv = op.getExtent(m.d);
  if (tensorCores && (m.dqk % 64 || m.dv % 64 || m.dqk > 256 || m.dv > 256))
    return fail("head dimensions must be 64, 128, 192 or 256");
  if (m.dqk > 256 || m.dv > 256)
    return fail("head dimensions above 256");
  Type out = cast<RankedTensorType>(op.getResultTypes()[0]).getElementType();
  if (!out.isF32() && !out.isF16() && !out.isBF16())
    return fail("the result is not f32, f16 or bf16");

  // The score's code; none of it may depend on the value column.
  if (!collectScoreOps(op, m.red, d, m.scoreOps, why))
    return std::nullopt;
  if (dependsOn(m.score, d, body))
    return fail("the score depends on the value column");
  m.keyLimit = getKeyLimit(m.score, op.getIndex(m.i), m.j, m.lq, m.lk);
  if (m.keyLimit)
    m.maskCondition =
        m.score.getDefiningOp<arith::SelectOp>().getCondition().getDefiningOp();
  return m;
}

bool mlir::tang::isSharedByGroup(ReadOp read, Value index, int64_t g) {
  AffineMap map = read.getMap();
  MLIRContext *ctx = read.getContext();
  SmallVector<AffineExpr> first;
  for (int64_t c = 0; c < g; ++c) {
    // The map with index = g * k + c (k in the index's place).
    AffineMap at = map;
    for (auto [pos, v] : llvm::enumerate(read.getIndices()))
      if (v == index) {
        AffineExpr dim = getAffineDimExpr(pos, ctx);
        at =
            at.replace(dim, dim * g + c, map.getNumDims(), map.getNumSymbols());
      }
    SmallVector<AffineExpr> results =
        llvm::map_to_vector(at.getResults(), [&](AffineExpr e) {
          return simplifyAffineExpr(e, map.getNumDims(), map.getNumSymbols());
        });
    if (c == 0)
      first = std::move(results);
    else if (results != first)
      return false;
  }
  return true;
}

namespace {

/// The rows per block of split online-softmax reduction `m`: the largest
/// divisor g <= 8 of the extent of the index before the value column (g x
/// dv <= 1024: the block's workgroup buffer) for which every read of a key
/// is shared by g consecutive values of that index (isSharedByGroup); 1
/// when no read of a key uses that index through a floordiv.
int64_t getSharingGroup(ComprehensionOp op, const SplitSoftmaxMatch &m) {
  if (m.d == 0)
    return 1;
  Value h = op.getIndex(m.d - 1);
  int64_t extent = op.getExtent(m.d - 1);
  SmallVector<ReadOp> keyReads;
  op.getBodyBlock().walk([&](ReadOp read) {
    if (readUses(read, m.j))
      keyReads.push_back(read);
  });
  if (llvm::none_of(keyReads, [&](ReadOp r) { return readUses(r, h); }))
    return 1;
  for (int64_t g = std::min<int64_t>(8, extent); g > 1; --g)
    if (extent % g == 0 && g * m.dv <= 1024 &&
        llvm::all_of(keyReads,
                     [&](ReadOp r) { return isSharedByGroup(r, h, g); }))
      return g;
  return 1;
}

bool isNegInfWith(Value v, Value sel);

/// Whether `v` is a float constant zero (either sign).
bool isZeroConstant(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValue().isZero();
}

/// Whether `v` is the constant -inf.
bool isNegInfConstant(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValue().isInfinity() && f.getValue().isNegative();
}

/// The key limit of online-softmax reduction `op` (SplitSoftmaxKeyLimit):
/// a select(j + a < x, s, -inf) the score is -inf with, x computed in the
/// body from indices other than j and `d`. `maxKeys` bounds j (the
/// comparison must not wrap).
std::optional<SplitSoftmaxKeyLimit> matchKeyLimit(ComprehensionOp op, Value j,
                                                  Value d, int64_t maxKeys) {
  using P = arith::CmpIPredicate;
  Block &body = op.getBodyBlock();
  Value score = op.getYield().getValues()[0];
  for (Operation &inner : body.without_terminator()) {
    auto sel = dyn_cast<arith::SelectOp>(inner);
    if (!sel || !isNegInfConstant(sel.getFalseValue()) ||
        !isNegInfWith(score, sel))
      continue;
    auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
    if (!cmp || cmp->getBlock() != &body)
      continue;
    // Normalised to the key's side on the left (x > y is y < x).
    P pred = cmp.getPredicate();
    Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
    if (!getIndexOffset(lhs, j)) {
      std::swap(lhs, rhs);
      pred = pred == P::sgt ? P::slt : pred == P::sge ? P::sle : P::eq;
    }
    std::optional<int64_t> a = getIndexOffset(lhs, j);
    if (!a || (pred != P::slt && pred != P::sle) || dependsOn(rhs, j, body) ||
        dependsOn(rhs, d, body))
      continue;
    // j + a is exact in the comparison's type for every key.
    unsigned width =
        lhs.getType().isIndex() ? 64 : lhs.getType().getIntOrFloatBitWidth();
    if (width < 64 && (maxKeys == std::numeric_limits<int64_t>::max() ||
                       maxKeys + std::abs(*a) >= (int64_t(1) << (width - 1))))
      continue;
    // x's operations: scalar code of the body (no nested reduction).
    llvm::SetVector<Operation *> slice;
    bool scalar = true;
    std::function<void(Value)> visit = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != &body || slice.contains(def))
        return;
      if (def->getNumRegions()) {
        scalar = false;
        return;
      }
      for (Value operand : def->getOperands())
        visit(operand);
      slice.insert(def);
    };
    visit(rhs);
    if (!scalar)
      continue;
    SplitSoftmaxKeyLimit limit;
    limit.limit = rhs;
    limit.offset = (pred == P::sle ? 1 : 0) - *a;
    limit.condition = cmp;
    for (Operation &o : body.without_terminator())
      if (slice.contains(&o))
        limit.ops.push_back(&o);
    return limit;
  }
  return std::nullopt;
}

} // namespace

std::optional<SplitSoftmaxMatch>
mlir::tang::matchSplitSoftmax(ComprehensionOp op, std::string &why) {
  auto fail = [&](const Twine &reason) -> std::optional<SplitSoftmaxMatch> {
    why = reason.str();
    return std::nullopt;
  };
  if (op.getBuiltinMonoid() != MonoidKind::OnlineSoftmax ||
      op.getNumReduced() != 1 || op.getNumParallel() < 1 ||
      op.getNumResults() != 1)
    return fail("not a one-index online-softmax reduction");
  SplitSoftmaxMatch m;
  m.d = op.getNumParallel() - 1;
  m.j = op.getIndex(op.getNumParallel());
  m.rows = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p) {
    if (op.isSymbolicExtent(p))
      return fail("a parallel extent is symbolic");
    if (p != m.d)
      m.rows *= op.getExtent(p);
  }
  m.dv = op.getExtent(m.d);
  if (m.rows > 65535)
    return fail("more rows than the grid holds");
  // A lane holds dv / 32 carriers; the block's workgroup buffer holds
  // 4 x dv of them.
  if (m.dv > 512)
    return fail("more than 512 value columns");
  Block &body = op.getBodyBlock();
  Value d = op.getIndex(m.d);
  ValueRange yields = op.getYield().getValues();
  Value value = stripExtensions(yields[1]);
  auto valueMask = value.getDefiningOp<arith::SelectOp>();
  if (valueMask && isZeroConstant(stripExtensions(valueMask.getFalseValue())))
    value = stripExtensions(valueMask.getTrueValue());
  else
    valueMask = {};
  auto v = value.getDefiningOp<ReadOp>();
  if (!v || v.getFill() || !isContiguousIn(v, d) || !readUses(v, m.j))
    return fail("the value is not a read contiguous in the last index");
  m.value = v;
  if (dependsOn(yields[0], d, body))
    return fail("the score depends on the value column");
  // The keys' bound: the extent, or the value tensor's dimension its read
  // takes the key as.
  unsigned key = op.getNumParallel();
  int64_t maxKeys = std::numeric_limits<int64_t>::max();
  if (!op.isSymbolicExtent(key))
    maxKeys = op.getExtent(key);
  auto shape = cast<RankedTensorType>(v.getTensor().getType()).getShape();
  for (auto [pos, e] : llvm::enumerate(v.getMap().getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(e);
        dim && v.getIndices()[dim.getPosition()] == m.j &&
        !ShapedType::isDynamic(shape[pos]))
      maxKeys = std::min(maxKeys, shape[pos]);
  m.keyLimit = matchKeyLimit(op, m.j, d, maxKeys);
  if (valueMask) {
    IRMapping same;
    llvm::DenseMap<Value, Value> known;
    if (!m.keyLimit ||
        !sameValue(valueMask.getCondition(),
                   m.keyLimit->condition->getResult(0), same, known))
      return fail("the value is masked by other than the score's key limit");
  }
  m.group = getSharingGroup(op, m);
  // A block's keys are one run: with a limit per row, a group of one.
  if (m.keyLimit && m.group > 1 &&
      dependsOn(m.keyLimit->limit, op.getIndex(m.d - 1), body))
    m.group = 1;
  return m;
}

std::optional<SplitSoftmaxMma>
mlir::tang::matchSplitSoftmaxMma(ComprehensionOp op, const SplitSoftmaxMatch &m,
                                 std::string &why) {
  auto fail = [&](const Twine &reason) -> std::optional<SplitSoftmaxMma> {
    why = reason.str();
    return std::nullopt;
  };
  SplitSoftmaxMma mm;
  mm.red = getOnlyNestedReduction(op.getBodyBlock(), why);
  if (!mm.red)
    return std::nullopt;
  if (mm.red.getBuiltinMonoid() != MonoidKind::Add ||
      mm.red.getNumReduced() != 1 || mm.red.getNumParallel() != 0 ||
      mm.red.isSymbolicExtent(0))
    return fail("the score is not a dot product of a static extent");
  Value e = mm.red.getIndex(0);
  mm.dqk = mm.red.getExtent(0);
  if (!matchDotFactors(op, mm.red, m.j, mm.q, mm.k, mm.factors, why))
    return std::nullopt;
  // The summand is the product alone (no rounding inside it), its
  // constant factors constants, summed in f32 (the compute type of f32,
  // f16 and bf16).
  for (Operation &inner : mm.red.getBodyBlock().without_terminator())
    if (!isa<ReadOp, arith::ExtFOp, arith::MulFOp, arith::ConstantOp>(inner))
      return fail("the summand holds more than a product of reads");
  Type sum = mm.red.getResult(0).getType();
  if (!sum.isF32() && !sum.isF16() && !sum.isBF16())
    return fail("the dot product is not summed as f32, f16 or bf16");
  for (Value f : mm.factors)
    if (!f.getDefiningOp<arith::ConstantOp>())
      return fail("a factor of the summand is not a constant");
  mm.v = m.value;
  mm.elementType = mm.k.getType();
  if (!mm.elementType.isF16() && !mm.elementType.isBF16())
    return fail("the keys are not f16 or bf16");
  if (mm.v.getType() != mm.elementType)
    return fail("the values' element type is not the keys'");
  // An f32 query is split into the keys' type and what rounding left: f16
  // holds neither its range nor that remainder's.
  Type tq = mm.q.getType();
  if (tq != mm.elementType && !(tq.isF32() && mm.elementType.isBF16()))
    return fail("the query is neither of the keys' type nor f32 beside bf16 "
                "keys");
  // A lane loads 8 of a key's elements at once (an operand register pair
  // of two k16 steps), and 8 of a value's columns (eight n8 tiles).
  if (mm.dqk % 32 || mm.dqk > 256 || m.dv % 64 || m.dv > 256)
    return fail("the head dimensions are not multiples of 32 (keys) and "
                "64 (values) up to 256");
  if (!isVectorizable(mm.k, e, 8) || !isVectorizable(mm.v, op.getIndex(m.d), 8))
    return fail("the keys or values are not read 8 contiguous elements at "
                "a time");
  // The value's chain is its read and extensions; every other operation of
  // the body is the score's (the only nested reduction is the dot product).
  if (!collectScoreOps(op, mm.red, op.getIndex(m.d), mm.scoreOps, why))
    return std::nullopt;
  return mm;
}

int64_t mlir::tang::getSoftmaxSplits(ComprehensionOp op,
                                     const SplitSoftmaxMatch &m,
                                     int64_t smCount, int64_t perSm) {
  constexpr int64_t kMaxSplits = 64, kMinKeys = 64;
  // Measured on the H200 and H100 (bench_decode, Qwen3-8B shapes; 1, 2, 4
  // and 8 blocks a multiprocessor, rounded up and down, tried:
  // bench/results/2026-12-05-h200-decode-splits, 2026-12-05-h100-decode-
  // rounding): mma.sync blocks (212 registers a thread, two resident a
  // multiprocessor) ran fastest at as many as are resident at once, the
  // splits rounded down: a block past them waits for a whole run of keys
  // (batch 4, 32 row groups: 8 splits 10-12% faster than 5, and 9 splits
  // 12-15% slower than 5). Lane blocks near eight a multiprocessor (4, 8
  // and 16 tried), rounded up.
  int64_t groups = m.rows / m.group;
  if (perSm <= 0)
    perSm = m.mma ? 2 : 8;
  int64_t blocks = perSm * std::max<int64_t>(smCount, 1);
  int64_t splits = m.mma ? blocks / groups : llvm::divideCeil(blocks, groups);
  splits = std::clamp<int64_t>(splits, 1, kMaxSplits);
  unsigned j = op.getNumParallel();
  if (!op.isSymbolicExtent(j))
    splits = std::clamp<int64_t>(llvm::divideCeil(op.getExtent(j), kMinKeys), 1,
                                 splits);
  return splits;
}

namespace {

/// `v` without float extensions and truncations.
Value stripCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// Whether `v` is -inf wherever `sel` is (through casts, the sum or
/// difference with another value, a product with a positive constant).
bool isNegInfWith(Value v, Value sel) {
  v = stripCasts(v);
  if (v == sel)
    return true;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<arith::SubFOp>(def))
    return isNegInfWith(def->getOperand(0), sel);
  if (isa_and_nonnull<arith::AddFOp>(def))
    return isNegInfWith(def->getOperand(0), sel) ||
           isNegInfWith(def->getOperand(1), sel);
  if (isa_and_nonnull<arith::MulFOp>(def))
    for (int side = 0; side < 2; ++side) {
      auto c = def->getOperand(1 - side).getDefiningOp<arith::ConstantOp>();
      auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
      if (f && f.getValueAsDouble() > 0 &&
          isNegInfWith(def->getOperand(side), sel))
        return true;
    }
  return false;
}

/// Whether `v` is 0 wherever `sel` is -inf: a product (or quotient) with
/// a factor exp(-inf), a select between such values and zeros.
bool vanishesWith(Value v, Value sel) {
  v = stripCasts(v);
  Operation *def = v.getDefiningOp();
  if (auto choice = dyn_cast_or_null<arith::SelectOp>(def)) {
    auto zeroOr = [&](Value w) {
      auto c = stripCasts(w).getDefiningOp<arith::ConstantOp>();
      auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
      return (f && f.getValue().isZero()) || vanishesWith(w, sel);
    };
    return zeroOr(choice.getTrueValue()) && zeroOr(choice.getFalseValue());
  }
  if (isa_and_nonnull<arith::MulFOp>(def))
    return vanishesWith(def->getOperand(0), sel) ||
           vanishesWith(def->getOperand(1), sel);
  if (isa_and_nonnull<arith::DivFOp>(def))
    return vanishesWith(def->getOperand(0), sel);
  if (auto ex = dyn_cast_or_null<math::ExpOp>(def))
    return isNegInfWith(ex.getOperand(), sel);
  return false;
}

} // namespace

std::optional<ScoreMatch> mlir::tang::matchScoreReduction(ComprehensionOp op,
                                                          std::string &why,
                                                          bool tensorCores) {
  auto fail = [&](const Twine &reason) -> std::optional<ScoreMatch> {
    why = reason.str();
    return std::nullopt;
  };
  std::optional<MonoidKind> monoid = op.getBuiltinMonoid();
  bool add = monoid == MonoidKind::Add && op.getNumResults() == 1;
  bool norm = monoid == MonoidKind::SoftmaxNorm && op.getNumResults() == 2;
  if (op.getNumReduced() != 1 || op.getNumParallel() < 1 || (!add && !norm))
    return fail("not a one-index add or softmax_norm reduction");
  ScoreMatch m;
  m.monoid = *monoid;
  m.y = op.getIndex(op.getNumParallel());
  m.ly = op.getExtent(op.getNumParallel());
  Block &body = op.getBodyBlock();
  ValueRange yields = op.getYield().getValues();

  // W's chain: the yield's casts, the product, W's read and its casts.
  llvm::SetVector<Operation *> wOps;
  if (m.monoid == MonoidKind::Add) {
    m.c = op.getNumParallel() - 1;
    Value c = op.getIndex(*m.c);
    Value cur = yields[0];
    while (Operation *def = cur.getDefiningOp()) {
      if (!isa<arith::ExtFOp, arith::TruncFOp>(def))
        break;
      wOps.insert(def);
      cur = def->getOperand(0);
    }
    auto mul = cur.getDefiningOp<arith::MulFOp>();
    if (!mul)
      return fail("the summand is not a product");
    wOps.insert(mul);
    for (int side = 0; side < 2 && !m.w; ++side) {
      auto read = stripCasts(mul->getOperand(side)).getDefiningOp<ReadOp>();
      if (read && readUses(read, c) && readUses(read, m.y)) {
        m.w = read;
        m.g = mul->getOperand(1 - side);
        for (Value v = mul->getOperand(side); v != read.getResult();
             v = v.getDefiningOp()->getOperand(0))
          wOps.insert(v.getDefiningOp());
        wOps.insert(read);
      }
    }
    if (!m.w || (tensorCores && !isContiguousIn(m.w, c)))
      return fail("the summand is not a per-key value times a read "
                  "contiguous in the output's last index");
    if (dependsOn(m.g, c, body))
      return fail("the per-key value depends on the output column");
    m.dc = op.getExtent(*m.c);
  } else {
    m.g = yields[0];
  }

  for (Operation &inner : body.without_terminator()) {
    auto nested = dyn_cast<ComprehensionOp>(inner);
    if (!nested)
      continue;
    if (m.dots.size() == 2)
      return fail("more than two nested reductions");
    if (nested.getBuiltinMonoid() != MonoidKind::Add ||
        nested.getNumReduced() != 1 || nested.getNumParallel() != 0)
      return fail("a nested reduction is not a dot product");
    ScoreDot dot;
    dot.red = nested;
    Value e = nested.getIndex(0);
    SmallVector<Value> leaves;
    getFactors(nested.getYield().getValues()[0], leaves);
    for (Value leaf : leaves) {
      auto read = leaf.getDefiningOp<ReadOp>();
      if (read && readUses(read, e)) {
        if (!dot.a)
          dot.a = read;
        else if (!dot.b)
          dot.b = read;
        else
          return fail("a dot product has more than two reads of its index");
        continue;
      }
      if (dependsOn(leaf, e, nested.getBodyBlock()))
        return fail("a factor of a dot product depends on its index");
      for (unsigned p = 0; p < op.getNumIndices(); ++p)
        if (dependsOn(leaf, op.getIndex(p), nested.getBodyBlock()))
          return fail("a factor of a dot product depends on an index");
      dot.factors.push_back(leaf);
    }
    if (!dot.a || !dot.b)
      return fail("a dot product is not a product of two reads");
    if (readUses(dot.a, m.y))
      std::swap(dot.a, dot.b);
    if (readUses(dot.a, m.y) || !readUses(dot.b, m.y))
      return fail("the key index is not read by exactly one factor of a dot "
                  "product");
    if (tensorCores && (!isContiguousIn(dot.a, e) || !isContiguousIn(dot.b, e)))
      return fail("a dot product's operands are not contiguous in its index");
    int64_t extent = nested.getExtent(0);
    if (tensorCores && (extent % 64 || extent > 256))
      return fail("a dot product's length is not 64, 128, 192 or 256");
    if (extent > 256)
      return fail("a dot product's length is above 256");
    m.dots.push_back(dot);
  }
  if (m.dots.empty())
    return fail("no dot product in the body");

  // The row index: the parallel index the first dot's row operand uses and
  // its key operand does not; every dot agrees, W does not use it.
  std::optional<unsigned> xi;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != m.c && readUses(m.dots[0].a, op.getIndex(p)) &&
        !readUses(m.dots[0].b, op.getIndex(p)))
      xi = p;
  if (!xi)
    return fail("no row index");
  m.x = *xi;
  Value x = op.getIndex(m.x);
  for (ScoreDot &dot : m.dots)
    if (!readUses(dot.a, x) || readUses(dot.b, x))
      return fail("the dot products do not share one row index");
  if (m.w && readUses(m.w, x))
    return fail("the summand's read depends on the row index");

  Type t = cast<RankedTensorType>(m.dots[0].a.getTensor().getType())
               .getElementType();
  SmallVector<ReadOp> operands;
  for (ScoreDot &dot : m.dots)
    operands.append({dot.a, dot.b});
  if (m.w)
    operands.push_back(m.w);
  for (ReadOp r : operands) {
    Type e = cast<RankedTensorType>(r.getTensor().getType()).getElementType();
    if (tensorCores && e != t)
      return fail("the operands' element types differ");
    if (!tensorCores && !e.isF16() && !e.isBF16() && !e.isF32())
      return fail("the operands are not f16, bf16 or f32");
  }
  if (tensorCores && !t.isF16() && !t.isBF16())
    return fail("the operands are not f16 or bf16");
  m.elementType = t;
  if (tensorCores && m.c && (m.dc % 64 || m.dc > 256))
    return fail("the output's last extent is not 64, 128, 192 or 256");
  if (m.c && m.dc > 256)
    return fail("the output's last extent is above 256");
  for (Type r : op.getResultTypes()) {
    Type e = cast<RankedTensorType>(r).getElementType();
    if (!e.isF32() && !e.isF16() && !e.isBF16())
      return fail("a result is not f32, f16 or bf16");
  }
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != m.x && p != m.c)
      batchCount *= op.getExtent(p);
  if (batchCount > 65535)
    return fail("more batch points than the grid holds");
  m.lx = op.getExtent(m.x);

  // The per-element code: every other body operation (none may use the
  // output column).
  for (Operation &inner : body.without_terminator()) {
    if (wOps.contains(&inner) || llvm::any_of(m.dots, [&](const ScoreDot &d) {
          return d.red == &inner;
        }))
      continue;
    if (m.c)
      for (Value r : inner.getResults())
        if (dependsOn(r, op.getIndex(*m.c), body))
          return fail("the per-key value depends on the output column");
    m.scoreOps.push_back(&inner);
  }
  // A causal-type mask the contributions vanish under.
  for (Operation *inner : m.scoreOps) {
    auto sel = dyn_cast<arith::SelectOp>(inner);
    if (!sel || !(m.monoid == MonoidKind::Add ? vanishesWith(m.g, sel)
                                              : isNegInfWith(m.g, sel)))
      continue;
    if (std::optional<int64_t> c = getKeyLimit(sel, x, m.y, m.lx, m.ly)) {
      m.keysUpTo = c;
      m.maskCondition = sel.getCondition().getDefiningOp();
      break;
    }
    if (std::optional<int64_t> c = getKeyLimit(sel, m.y, x, m.ly, m.lx)) {
      m.keysFrom = c;
      m.maskCondition = sel.getCondition().getDefiningOp();
      break;
    }
  }
  return m;
}

std::optional<SmallVector<unsigned>>
mlir::tang::matchDots(ComprehensionOp first, const ScoreMatch &m1,
                      ComprehensionOp second, const ScoreMatch &m2) {
  if (m1.monoid != MonoidKind::Add || m2.monoid != MonoidKind::Add ||
      m1.x != m2.x || m1.c != m2.c || m1.ly != m2.ly || m1.lx != m2.lx ||
      m1.elementType != m2.elementType ||
      first.getNumParallel() != second.getNumParallel())
    return std::nullopt;
  SmallVector<unsigned> dotOf;
  for (const ScoreDot &d2 : m2.dots) {
    std::optional<unsigned> found;
    for (auto [i, d1] : llvm::enumerate(m1.dots)) {
      IRMapping indices;
      for (unsigned p = 0; p < first.getNumIndices(); ++p)
        if (p != *m1.c)
          indices.map(first.getIndex(p), second.getIndex(p));
      llvm::DenseMap<Value, Value> known;
      ComprehensionOp r1 = d1.red, r2 = d2.red;
      if (sameValue(r1.getResult(0), r2.getResult(0), indices, known)) {
        found = i;
        break;
      }
    }
    if (!found)
      return std::nullopt;
    dotOf.push_back(*found);
  }
  return dotOf;
}

bool mlir::tang::isScoreSibling(ComprehensionOp op, ComprehensionOp sibling) {
  std::string ignored;
  std::optional<ScoreMatch> m = matchScoreReduction(op, ignored);
  std::optional<ScoreMatch> m2 = matchScoreReduction(sibling, ignored);
  return m && m2 && matchDots(op, *m, sibling, *m2);
}
