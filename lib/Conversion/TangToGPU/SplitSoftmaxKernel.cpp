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
//    (grid: splits x rows). A warp takes every 4th key of its block's run,
//    4 keys per step (their scores and value rows loaded before any is
//    used; a dot product in the score runs on the whole warp, lanes
//    striding it, shuffles summing); lane l holds the monoid's carrier of
//    value columns l, l + 32, ...; the warps' carriers are combined
//    through workgroup memory and
//    the block's carrier per column is written to a scratch buffer
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
  /// `red` on the warp: lane l takes indices l, l + 32, ..., the lanes'
  /// carriers combined by xor shuffles; maps its results in `mapping`
  /// (every lane gets them).
  LogicalResult emitWarpReduction(OpBuilder &b, BodyEmitter &emitter,
                                  ComprehensionOp red, Value lane,
                                  IRMapping &mapping);
  /// The keys (n) and the keys per block (chunk): ceil(n / splits), at
  /// least kMinKeys (a short context on few blocks, the others done at
  /// once).
  std::pair<Value, Value> emitChunk(OpBuilder &b, BodyEmitter &emitter);
  /// Maps the parallel indices but the value column to row `row`'s point.
  void mapRow(OpBuilder &b, Value row, IRMapping &mapping);
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

LogicalResult SplitSoftmaxEmitter::emitWarpReduction(OpBuilder &b,
                                                     BodyEmitter &emitter,
                                                     ComprehensionOp red,
                                                     Value lane,
                                                     IRMapping &mapping) {
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
  if (failed(mc))
    return failure();
  FailureOr<SmallVector<Value>> partial = emitter.emitStridedReduction(
      b, red, mapping, *mc, lane, cst(b, red.getExtent(0)), cst(b, 32));
  if (failed(partial))
    return failure();
  SmallVector<Value> total = std::move(*partial);
  for (int32_t off = 1; off <= 16; off *= 2) {
    SmallVector<Value> other;
    for (Value v : total)
      other.push_back(
          gpu::ShuffleOp::create(b, loc, v, off, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult());
    total = mc->combine(b, loc, total, other);
  }
  for (auto [r, v] : llvm::zip(red.getResults(), mc->finalize(b, loc, total)))
    mapping.map(r, v);
  return success();
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

LogicalResult SplitSoftmaxEmitter::emitPartial(Value scratch) {
  Kernel &k = r.k;
  OpBuilder &b = r.b;
  Block &entry = k.func.getBody().front();
  k.grid = {splits, m.rows, 1};
  k.block = {32 * kWarps, 1, 1};
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value buf = k.func.addWorkgroupAttribution(
      MemRefType::get({kWarps, m.dv, carrierSize}, b.getF32Type(), AffineMap(),
                      wgSpace),
      loc);

  BodyEmitter emitter(r.tensors, &entry);
  emitter.setSizes(k.sizes);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(b, 32));
  IRMapping base;
  mapRow(b, row, base);

  // The block's run of keys: [split * chunk, min(n, (split + 1) * chunk)).
  auto [n, chunk] = emitChunk(b, emitter);
  Value start = arith::MulIOp::create(b, loc, split, chunk);
  Value end = arith::MinUIOp::create(
      b, loc, n, arith::AddIOp::create(b, loc, start, chunk));

  // Lane l's value columns l, l + 32, ... (column 0 stands in past the
  // last, and nothing is stored for it).
  int64_t perLane = llvm::divideCeil(m.dv, 32);
  SmallVector<Value> cols, colOk;
  for (int64_t t = 0; t < perLane; ++t) {
    Value c = arith::AddIOp::create(b, loc, lane, cst(b, 32 * t));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     cst(b, m.dv));
    colOk.push_back(ok);
    cols.push_back(arith::SelectOp::create(b, loc, ok, c, cst(b, 0)));
  }

  Block &body = op.getBodyBlock();
  Value d = op.getIndex(m.d);
  llvm::SetVector<Operation *> columnOps = getDependentOps(body, d);
  Value scoreYield = op.getYield().getValues()[0];
  Value valueYield = op.getYield().getValues()[1];

  SmallVector<Value> init;
  for (int64_t t = 0; t < perLane; ++t)
    llvm::append_range(init, monoid.identity(b, loc));
  Value first = arith::AddIOp::create(b, loc, start, warp);
  auto loop =
      scf::ForOp::create(b, loc, first, end, cst(b, kWarps * kUnroll), init);
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    Value iv = loop.getInductionVar();
    SmallVector<Value> carriers(loop.getRegionIterArgs());
    // Every key's score and value columns first: the loads in flight
    // together.
    SmallVector<Value> valid, scores;
    SmallVector<SmallVector<Value>> values;
    for (int64_t u = 0; u < kUnroll; ++u) {
      Value j = arith::AddIOp::create(lb, loc, iv, cst(lb, u * kWarps));
      Value ok =
          arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult, j, end);
      valid.push_back(ok);
      j = arith::SelectOp::create(lb, loc, ok, j, iv);
      IRMapping mapping = base;
      mapping.map(m.j, j);
      mapping.map(d, cols[0]);
      for (Operation &inner : body.without_terminator()) {
        auto red = dyn_cast<ComprehensionOp>(inner);
        LogicalResult done =
            red && isWarpReduction(red, columnOps)
                ? emitWarpReduction(lb, emitter, red, lane, mapping)
                : emitter.emit(lb, &inner, mapping);
        if (failed(done))
          return failure();
      }
      scores.push_back(mapping.lookupOrDefault(scoreYield));
      SmallVector<Value> vs{mapping.lookupOrDefault(valueYield)};
      for (int64_t t = 1; t < perLane; ++t) {
        IRMapping column = mapping;
        column.map(d, cols[t]);
        for (Operation *inner : columnOps)
          if (failed(emitter.emit(lb, inner, column)))
            return failure();
        vs.push_back(column.lookupOrDefault(valueYield));
      }
      values.push_back(std::move(vs));
    }
    for (int64_t u = 0; u < kUnroll; ++u)
      for (int64_t t = 0; t < perLane; ++t) {
        ArrayRef<Value> c =
            ArrayRef(carriers).slice(t * carrierSize, carrierSize);
        SmallVector<Value> next =
            monoid.accumulate(lb, loc, c, ValueRange{scores[u], values[u][t]});
        for (int64_t e = 0; e < carrierSize; ++e)
          carriers[t * carrierSize + e] = arith::SelectOp::create(
              lb, loc, valid[u], next[e], carriers[t * carrierSize + e]);
      }
    scf::YieldOp::create(lb, loc, carriers);
  }

  // The warps' carriers per column through workgroup memory...
  for (int64_t t = 0; t < perLane; ++t) {
    auto store = scf::IfOp::create(b, loc, colOk[t], /*withElse=*/false);
    OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
    for (int64_t e = 0; e < carrierSize; ++e)
      memref::StoreOp::create(sb, loc, loop.getResult(t * carrierSize + e), buf,
                              ValueRange{warp, cols[t], cst(sb, e)});
  }
  gpu::BarrierOp::create(b, loc);
  // ...combined in warp order by a thread per column, into the scratch.
  int64_t threads = 32 * kWarps;
  for (int64_t q = 0, e = llvm::divideCeil(m.dv, threads); q < e; ++q) {
    Value c = arith::AddIOp::create(b, loc, tid, cst(b, q * threads));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     cst(b, m.dv));
    auto inside = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    SmallVector<Value> total = monoid.identity(ib, loc);
    for (int64_t w = 0; w < kWarps; ++w) {
      SmallVector<Value> part;
      for (int64_t e = 0; e < carrierSize; ++e)
        part.push_back(memref::LoadOp::create(
            ib, loc, buf, ValueRange{cst(ib, w), c, cst(ib, e)}));
      total = monoid.combine(ib, loc, total, part);
    }
    for (int64_t e = 0; e < carrierSize; ++e)
      memref::StoreOp::create(ib, loc, total[e], scratch,
                              ValueRange{row, split, c, cst(ib, e)});
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
