//===- SplitSoftmaxKernel.cpp - online softmax split over keys --*- C++ -*-===//
//
// A reduction under the online-softmax monoid whose value is a read
// contiguous in the value column and whose score does not depend on it,
//
//   O[.., d] = online_softmax_j (s(.., j), v(.., j, d)),
//
// (Tang/Analysis/AttentionMatchers.h, matchSplitSoftmax) with few rows and
// many keys -- decode attention: one query per head, a context of
// thousands -- runs as flash-decoding, in two kernels:
//
//  * the keys of each row are split among `splits` blocks of 4 warps
//    (grid: splits x row groups). A block takes a group of rows that read
//    the same keys and values (SplitSoftmaxMatch::group: the query heads of
//    one key/value head), each key and value vector loaded once for them.
//    A warp takes every 4th key of its block's run, 4 keys per step (their
//    scores and value rows loaded before any is used); a dot product in
//    the score runs on the whole warp, lanes taking runs of up to 8
//    elements as vectors, shuffles summing; lane l holds each row's
//    maximum, sum and value columns [l v, l v + v) + 32 v k as vectors of
//    v; the warps' carriers are combined through workgroup memory and
//    the block's carrier per row and column is written to a scratch buffer
//    [rows, splits, columns, carrier];
//  * a thread per (row, column) combines the carriers of the splits that
//    had keys, in split order, and writes the finalised value. (Keys are
//    interleaved among a block's warps: the monoid must be commutative,
//    as online_softmax is; rounding differs from the interpreter's order.)
//
// Both combine with the monoid's own code (MonoidCodegen): the partial
// states are combined by the same monoid, so masked keys, empty splits and
// infinities mean what they mean in the interpreter. Symbolic key extents
// are read from the sizes buffer: one launch (and one CUDA graph) serves
// every context length, blocks past the keys doing nothing.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "RowVectors.h"
#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// Warps per block of the partial kernel.
constexpr int64_t kWarps = 4;
/// Keys per warp per step.
constexpr int64_t kUnroll = 4;
/// Keys per block at least.
constexpr int64_t kMinKeys = kWarps * kUnroll * 4;

/// The operations of `body` (in order) whose values depend on `index`,
/// directly or through values their nested regions use.
llvm::SetVector<Operation *> getDependentOps(Block &body, Value index) {
  llvm::DenseSet<Value> dependent{index};
  llvm::SetVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    bool dep = false;
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        dep |= dependent.contains(v);
    });
    if (!dep)
      continue;
    ops.insert(&op);
    for (Value r : op.getResults())
      dependent.insert(r);
  }
  return ops;
}

class SplitSoftmaxEmitter {
public:
  SplitSoftmaxEmitter(KernelRequest &r, const MonoidCodegen &monoid)
      : r(r), op(r.op), m(*r.choice.splitSoftmax), splits(r.choice.splits),
        loc(op.getLoc()), monoid(monoid),
        carrierSize(static_cast<int64_t>(monoid.getCarrierTypes().size())) {}

  LogicalResult emit();

private:
  Value cst(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  /// Whether nested reduction `red` of the body runs on the whole warp:
  /// one static reduced index, a commutative monoid of f32 carriers, and
  /// no dependence on the value column (the score's dot product).
  bool isWarpReduction(ComprehensionOp red,
                       const llvm::SetVector<Operation *> &columnOps);
  /// `red` on the warp: lane l takes runs of `v` indices from l * v, 32 v
  /// apart, loading them as vectors (shared through `cache`), or, when the
  /// extent is not a multiple of 32 v for any v > 1, indices l, l + 32,
  /// ...; the lanes' carriers combined by xor shuffles; maps its results
  /// in `mapping` (every lane gets them).
  LogicalResult emitWarpReduction(OpBuilder &b, BodyEmitter &emitter,
                                  ComprehensionOp red, Value lane,
                                  IRMapping &mapping, RowCache &cache);
  /// The value columns a lane loads at once: 16 bytes of the value read at
  /// most, a run of 32 runs no wider than the columns, or 1 when the read
  /// is not contiguous in runs of that width.
  int64_t getValueVector();
  /// The keys (n) and the keys per block (chunk): ceil(n / splits), at
  /// least kMinKeys (a short context on few blocks, the others done at
  /// once).
  std::pair<Value, Value> emitChunk(OpBuilder &b, BodyEmitter &emitter);
  /// Maps the parallel indices but the value column to row `row`'s point.
  void mapRow(OpBuilder &b, Value row, IRMapping &mapping);
  /// Maps the parallel indices before the last two (h, d) to the point of
  /// row group `g` (m.group consecutive values of h); returns k, the
  /// group's rows being h = m.group * k + c.
  Value mapGroup(OpBuilder &b, Value g, IRMapping &mapping);
  /// The partial kernel (r.k): each block's carriers into `scratch`.
  LogicalResult emitPartial(Value scratch);
  /// The combining kernel `f`: the splits' carriers, finalised, into the
  /// output.
  LogicalResult emitCombine(Kernel &f, unsigned scratchArg, unsigned outArg);

  KernelRequest &r;
  ComprehensionOp op;
  const SplitSoftmaxMatch &m;
  int64_t splits;
  Location loc;
  const MonoidCodegen &monoid;
  int64_t carrierSize;
};

bool SplitSoftmaxEmitter::isWarpReduction(
    ComprehensionOp red, const llvm::SetVector<Operation *> &columnOps) {
  if (red.getNumParallel() != 0 || red.getNumReduced() != 1 ||
      red.isSymbolicExtent(0) || columnOps.contains(red))
    return false;
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
  return succeeded(mc) && mc->isCommutative() &&
         llvm::all_of(mc->getCarrierTypes(), [](Type t) { return t.isF32(); });
}

LogicalResult
SplitSoftmaxEmitter::emitWarpReduction(OpBuilder &b, BodyEmitter &emitter,
                                       ComprehensionOp red, Value lane,
                                       IRMapping &mapping, RowCache &cache) {
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
  if (failed(mc))
    return failure();
  int64_t extent = red.getExtent(0);
  int64_t v = 8;
  while (v > 1 && extent % (32 * v) != 0)
    v /= 2;
  FailureOr<SmallVector<Value>> partial;
  if (v > 1) {
    SmallVector<Operation *> ops =
        llvm::map_to_vector(red.getBodyBlock().without_terminator(),
                            [](Operation &o) { return &o; });
    partial =
        emitVectorPartial(b, loc, red, ops, red.getIndex(0), extent, *mc, lane,
                          32, v, mapping, r.tensors, emitter, &cache);
  } else {
    partial = emitter.emitStridedReduction(b, red, mapping, *mc, lane,
                                           cst(b, extent), cst(b, 32));
  }
  if (failed(partial))
    return failure();
  SmallVector<Value> total = emitWarpCombine(b, loc, *mc, *partial, lane);
  for (auto [r, v] : llvm::zip(red.getResults(), mc->finalize(b, loc, total)))
    mapping.map(r, v);
  return success();
}

int64_t SplitSoftmaxEmitter::getValueVector() {
  auto read =
      stripExtensions(op.getYield().getValues()[1]).getDefiningOp<ReadOp>();
  int64_t bytes =
      std::max<int64_t>(1, read.getType().getIntOrFloatBitWidth() / 8);
  int64_t v = std::min<int64_t>(16 / bytes, m.dv / 32);
  while (v > 1 && (m.dv % v != 0 || !isVectorizable(read, op.getIndex(m.d), v)))
    v /= 2;
  return std::max<int64_t>(v, 1);
}

std::pair<Value, Value> SplitSoftmaxEmitter::emitChunk(OpBuilder &b,
                                                       BodyEmitter &emitter) {
  Value n = emitter.getExtent(b, loc, op, op.getNumParallel());
  Value chunk = arith::MaxUIOp::create(
      b, loc,
      arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, n, cst(b, splits - 1)),
          cst(b, splits)),
      cst(b, kMinKeys));
  return {n, chunk};
}

void SplitSoftmaxEmitter::mapRow(OpBuilder &b, Value row, IRMapping &mapping) {
  Value rest = row;
  for (int i = static_cast<int>(m.d) - 1; i >= 0; --i) {
    Value ext = cst(b, op.getExtent(i));
    mapping.map(op.getIndex(i), arith::RemUIOp::create(b, loc, rest, ext));
    rest = arith::DivUIOp::create(b, loc, rest, ext);
  }
}

Value SplitSoftmaxEmitter::mapGroup(OpBuilder &b, Value g, IRMapping &mapping) {
  if (m.d == 0)
    return cst(b, 0);
  Value hk = arith::RemUIOp::create(b, loc, g,
                                    cst(b, op.getExtent(m.d - 1) / m.group));
  Value rest = arith::DivUIOp::create(b, loc, g,
                                      cst(b, op.getExtent(m.d - 1) / m.group));
  for (int i = static_cast<int>(m.d) - 2; i >= 0; --i) {
    Value ext = cst(b, op.getExtent(i));
    mapping.map(op.getIndex(i), arith::RemUIOp::create(b, loc, rest, ext));
    rest = arith::DivUIOp::create(b, loc, rest, ext);
  }
  return hk;
}

LogicalResult SplitSoftmaxEmitter::emitPartial(Value scratch) {
  Kernel &k = r.k;
  OpBuilder &b = r.b;
  Block &entry = k.func.getBody().front();
  int64_t group = m.group;
  k.grid = {splits, m.rows / group, 1};
  k.block = {32 * kWarps, 1, 1};
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value buf = k.func.addWorkgroupAttribution(
      MemRefType::get({kWarps, group, m.dv, carrierSize}, b.getF32Type(),
                      AffineMap(), wgSpace),
      loc);

  BodyEmitter emitter(r.tensors, &entry);
  emitter.setSizes(k.sizes);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value groupRow = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(b, 32));
  // Row c of the group: the group's indices, the one before d (h) at
  // group * k + c.
  IRMapping groupPoint;
  Value hk = mapGroup(b, groupRow, groupPoint);
  Value h = m.d > 0 ? op.getIndex(m.d - 1) : Value();
  SmallVector<IRMapping> rowPoints;
  for (int64_t c = 0; c < group; ++c) {
    IRMapping point = groupPoint;
    if (h)
      point.map(h, group == 1
                       ? hk
                       : arith::AddIOp::create(
                             b, loc,
                             arith::MulIOp::create(b, loc, hk, cst(b, group)),
                             cst(b, c))
                             .getResult());
    rowPoints.push_back(std::move(point));
  }

  // The block's run of keys: [split * chunk, min(n, (split + 1) * chunk)).
  auto [n, chunk] = emitChunk(b, emitter);
  Value start = arith::MulIOp::create(b, loc, split, chunk);
  Value end = arith::MinUIOp::create(
      b, loc, n, arith::AddIOp::create(b, loc, start, chunk));

  Block &body = op.getBodyBlock();
  Value d = op.getIndex(m.d);
  llvm::SetVector<Operation *> columnOps = getDependentOps(body, d);
  SmallVector<Operation *> rowOps;
  for (Operation &inner : body.without_terminator())
    if (!columnOps.contains(&inner))
      rowOps.push_back(&inner);
  Value scoreYield = op.getYield().getValues()[0];
  Value valueYield = op.getYield().getValues()[1];

  // Lane l's value columns: runs of `v` from l * v, 32 v apart (column 0
  // stands in past the last, and nothing is stored for it).
  int64_t v = getValueVector();
  int64_t runs = llvm::divideCeil(m.dv, 32 * v);
  int64_t perLane = runs * v;
  SmallVector<Value> runStart, runOk;
  for (int64_t t = 0; t < runs; ++t) {
    Value c = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, lane, cst(b, v)),
        cst(b, 32 * v * t));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     cst(b, m.dv));
    runOk.push_back(ok);
    runStart.push_back(arith::SelectOp::create(b, loc, ok, c, cst(b, 0)));
  }

  // Each row's carrier: the maximum and the sum (the same for all of its
  // columns: they see the same scores) and a value per column.
  SmallVector<Value> init;
  SmallVector<Value> identity = monoid.identity(b, loc);
  for (int64_t c = 0; c < group; ++c) {
    init.append({identity[0], identity[1]});
    init.append(perLane, identity[2]);
  }
  int64_t rowCarrier = 2 + perLane;
  Value first = arith::AddIOp::create(b, loc, start, warp);
  auto loop =
      scf::ForOp::create(b, loc, first, end, cst(b, kWarps * kUnroll), init);
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    Value iv = loop.getInductionVar();
    SmallVector<Value> carriers(loop.getRegionIterArgs());
    // The vectors loaded for a key, shared by the rows of the group.
    RowCache cache;
    if (group > 1) {
      cache.sharedIndex = h;
      body.walk([&](ReadOp read) {
        if (isSharedByGroup(read, h, group))
          cache.sharedReads.insert(read);
      });
    }
    // Every key's scores and value columns first: the loads in flight
    // together.
    SmallVector<Value> valid;
    SmallVector<SmallVector<Value>> scores(kUnroll);
    SmallVector<SmallVector<SmallVector<Value>>> values(kUnroll);
    for (int64_t u = 0; u < kUnroll; ++u) {
      Value j = arith::AddIOp::create(lb, loc, iv, cst(lb, u * kWarps));
      Value ok =
          arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult, j, end);
      valid.push_back(ok);
      j = arith::SelectOp::create(lb, loc, ok, j, iv);
      for (int64_t c = 0; c < group; ++c) {
        IRMapping mapping = rowPoints[c];
        mapping.map(m.j, j);
        for (Operation *inner : rowOps) {
          auto red = dyn_cast<ComprehensionOp>(inner);
          LogicalResult done =
              red && isWarpReduction(red, columnOps)
                  ? emitWarpReduction(lb, emitter, red, lane, mapping, cache)
                  : emitter.emit(lb, inner, mapping);
          if (failed(done))
            return failure();
        }
        scores[u].push_back(mapping.lookupOrDefault(scoreYield));
        SmallVector<Value> vs;
        for (int64_t t = 0; t < runs; ++t)
          if (failed(emitUnrolled(
                  lb, loc, columnOps.getArrayRef(), d, runStart[t], v, mapping,
                  r.tensors, emitter,
                  [&](OpBuilder &, int64_t) {
                    vs.push_back(mapping.lookupOrDefault(valueYield));
                  },
                  &cache, t)))
            return failure();
        values[u].push_back(std::move(vs));
      }
    }
    for (int64_t u = 0; u < kUnroll; ++u)
      for (int64_t c = 0; c < group; ++c) {
        MutableArrayRef<Value> row =
            MutableArrayRef(carriers).slice(c * rowCarrier, rowCarrier);
        SmallVector<Value> next(rowCarrier);
        for (int64_t p = 0; p < perLane; ++p) {
          // The same maximum and sum for every column (the code of the
          // first; the others' duplicates fold away).
          SmallVector<Value> col =
              monoid.accumulate(lb, loc, ValueRange{row[0], row[1], row[2 + p]},
                                ValueRange{scores[u][c], values[u][c][p]});
          if (p == 0) {
            next[0] = col[0];
            next[1] = col[1];
          }
          next[2 + p] = col[2];
        }
        for (int64_t e = 0; e < rowCarrier; ++e)
          row[e] = arith::SelectOp::create(lb, loc, valid[u], next[e], row[e]);
      }
    scf::YieldOp::create(lb, loc, carriers);
  }

  // The warps' carriers per row and column through workgroup memory...
  for (int64_t t = 0; t < runs; ++t) {
    auto store = scf::IfOp::create(b, loc, runOk[t], /*withElse=*/false);
    OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
    for (int64_t c = 0; c < group; ++c)
      for (int64_t e = 0; e < v; ++e) {
        Value col = arith::AddIOp::create(sb, loc, runStart[t], cst(sb, e));
        int64_t p = t * v + e;
        for (int64_t f = 0; f < carrierSize; ++f) {
          Value x = loop.getResult(c * rowCarrier + (f < 2 ? f : 2 + p));
          memref::StoreOp::create(
              sb, loc, x, buf, ValueRange{warp, cst(sb, c), col, cst(sb, f)});
        }
      }
  }
  gpu::BarrierOp::create(b, loc);
  // ...combined in warp order by a thread per row and column, into the
  // scratch.
  int64_t threads = 32 * kWarps;
  int64_t points = group * m.dv;
  for (int64_t q = 0, e = llvm::divideCeil(points, threads); q < e; ++q) {
    Value i = arith::AddIOp::create(b, loc, tid, cst(b, q * threads));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                     cst(b, points));
    auto inside = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    Value c = arith::DivUIOp::create(ib, loc, i, cst(ib, m.dv));
    Value col = arith::RemUIOp::create(ib, loc, i, cst(ib, m.dv));
    SmallVector<Value> total = monoid.identity(ib, loc);
    for (int64_t w = 0; w < kWarps; ++w) {
      SmallVector<Value> part;
      for (int64_t f = 0; f < carrierSize; ++f)
        part.push_back(memref::LoadOp::create(
            ib, loc, buf, ValueRange{cst(ib, w), c, col, cst(ib, f)}));
      total = monoid.combine(ib, loc, total, part);
    }
    Value row = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, groupRow, cst(ib, group)), c);
    for (int64_t f = 0; f < carrierSize; ++f)
      memref::StoreOp::create(ib, loc, total[f], scratch,
                              ValueRange{row, split, col, cst(ib, f)});
  }
  return success();
}

LogicalResult SplitSoftmaxEmitter::emitCombine(Kernel &f, unsigned scratchArg,
                                               unsigned outArg) {
  Block &entry = f.func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(b, op, {m.rows, m.dv}, f);
  if (failed(point))
    return failure();
  Value row = (*point)[0], c = (*point)[1];
  Value scratch = entry.getArgument(scratchArg);
  Value out = entry.getArgument(outArg);
  // The splits that had keys: ceil(n / chunk) (the others hold the
  // identity).
  BodyEmitter emitter(r.tensors, &entry);
  emitter.setSizes(f.sizes);
  auto [n, chunk] = emitChunk(b, emitter);
  Value used = arith::MinUIOp::create(
      b, loc, cst(b, splits),
      arith::DivUIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, n, arith::SubIOp::create(b, loc, chunk, cst(b, 1))),
          chunk));
  auto loop = scf::ForOp::create(b, loc, cst(b, 0), used, cst(b, 1),
                                 monoid.identity(b, loc));
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> part;
    for (int64_t e = 0; e < carrierSize; ++e)
      part.push_back(memref::LoadOp::create(
          lb, loc, scratch,
          ValueRange{row, loop.getInductionVar(), c, cst(lb, e)}));
    scf::YieldOp::create(
        lb, loc, monoid.combine(lb, loc, loop.getRegionIterArgs(), part));
  }
  Value result = monoid.finalize(b, loc, loop.getResults())[0];
  IRMapping mapping;
  mapRow(b, row, mapping);
  SmallVector<Value> at;
  for (unsigned i = 0; i < m.d; ++i)
    at.push_back(mapping.lookup(op.getIndex(i)));
  at.push_back(c);
  if (f.sizes)
    at = f.sizes->getIndices(b, loc, out, at);
  Type storage = cast<MemRefType>(out.getType()).getElementType();
  memref::StoreOp::create(b, loc, toStorage(b, loc, result, storage), out, at);
  return success();
}

LogicalResult SplitSoftmaxEmitter::emit() {
  auto f32 = Float32Type::get(op.getContext());
  Value scratch =
      r.addScratch(MemRefType::get({m.rows, splits, m.dv, carrierSize}, f32));
  unsigned scratchArg = cast<BlockArgument>(scratch).getArgNumber();
  unsigned outArg = cast<BlockArgument>(r.outputs[0]).getArgNumber();
  Kernel &combine = r.addFollowUp();
  if (failed(emitPartial(scratch)))
    return failure();
  return emitCombine(combine, scratchArg, outArg);
}

struct SplitSoftmaxKernelPattern : KernelPattern {
  SplitSoftmaxKernelPattern() : KernelPattern("split_softmax") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::SplitSoftmax || !r.choice.splitSoftmax)
      return notifyMatchFailure(r.op, "not a split_softmax choice");
    // The kernel keeps one maximum and sum per row for all its columns: the
    // carrier of the builtin online_softmax.
    if (r.op.getBuiltinMonoid() != MonoidKind::OnlineSoftmax) {
      r.op.emitOpError() << "split_softmax kernel: not the builtin "
                            "online_softmax monoid";
      return KernelMatch::Error;
    }
    FailureOr<MonoidCodegen> monoid = MonoidCodegen::get(r.op);
    if (failed(monoid))
      return KernelMatch::Error;
    if (!llvm::all_of(monoid->getCarrierTypes(),
                      [](Type t) { return t.isF32(); })) {
      r.op.emitOpError() << "split_softmax kernel: the monoid's carrier is "
                            "not f32 values";
      return KernelMatch::Error;
    }
    SplitSoftmaxEmitter emitter(r, *monoid);
    return succeeded(emitter.emit()) ? KernelMatch::Built : KernelMatch::Error;
  }
};

} // namespace

void mlir::tang::populateSplitSoftmaxKernelPatterns(
    KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<SplitSoftmaxKernelPattern>());
}
