//===- FlashKernel.cpp - online softmax on tensor cores ---------*- C++ -*-===//
//
// A reduction under the online-softmax monoid,
//
//   O[.., i, d] = online_softmax_j (s(i, j), v(j, d)),
//   s(i, j) = g(c * sum_e q(i, e) k(j, e), i, j),   v(j, d) = V[.., j, d],
//
// where q, k, V are reads of f16/bf16 tensors and g is any scalar code of
// the dot product and the indices (a scale, a causal or padding mask), is
// emitted as a flash-attention kernel: keyed on the monoid and the shape of
// the graph, never on a name.
//
// A block of 4 warps owns 64 query rows (16 per warp) and streams the keys
// and values through shared memory in 64-key steps (cp.async, double
// buffered, zero-filled past the end). Per step and warp: S = Q K^T on
// tensor cores (mma.sync m16n8k16; Q's fragments stay in registers for the
// whole loop), g on every score in registers, the running row maximum and
// the rescaling of the running sum and of the output accumulators, then
// P V on tensor cores with P's accumulators reused as the A operand (the
// m16n8 accumulator layout of two adjacent n8 tiles is the m16k16 operand
// layout). No L x L intermediate exists anywhere.
//
// With wgmma (sm_90a): two warpgroups of 64 query rows each, S by wgmma
// from swizzled shared tiles, P V with P from registers (the RS form: the
// same accumulator-to-operand identity). When the keys and values are
// boxes a bulk tensor copy can move (head dims 64 to 256), a producer
// warpgroup fills the key/value ring on full/empty mbarriers, each
// computing warpgroup overlaps its softmax with its own products (step t
// issues S(t) and O += P(t-1) V(t-1) and computes the softmax of S(t)
// while the second runs), and the two take turns issuing (ping-pong on
// named barriers). Key tiles wholly before the block's first row (with a
// causal-type mask) run without the mask's code. With 16-bit outputs
// exp(s - max) is ex2.approx.ftz of one fma, a positive constant scale of
// the score folded into it.
//
//===----------------------------------------------------------------------===//

#include "KernelForm.h"

#include "BodyEmitter.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "TensorCoreEmitter.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;

namespace {

/// c if the score is c x or, with a causal-type mask, select(mask, c x,
/// -inf), where x is the dot product and c a positive constant: then
/// max c x = c max x, and the softmax may scale by c inside its
/// exponent's fma instead of once per score.
std::optional<double> getPositiveScale(const FlashMatch &m) {
  ComprehensionOp red = m.red;
  if (!m.factors.empty())
    return std::nullopt;
  auto constantOf = [](Value v) -> std::optional<APFloat> {
    FloatAttr f;
    if (!matchPattern(v, m_Constant(&f)))
      return std::nullopt;
    return f.getValue();
  };
  Value v = m.score;
  if (m.maskCondition) {
    auto sel = v.getDefiningOp<arith::SelectOp>();
    if (!sel || sel.getCondition() != m.maskCondition->getResult(0))
      return std::nullopt;
    std::optional<APFloat> fill = constantOf(sel.getFalseValue());
    if (!fill || !fill->isInfinity() || !fill->isNegative())
      return std::nullopt;
    v = sel.getTrueValue();
  }
  if (v == red.getResult(0))
    return 1.0;
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  Value other = mul.getLhs() == red.getResult(0)   ? mul.getRhs()
                : mul.getRhs() == red.getResult(0) ? mul.getLhs()
                                                   : Value();
  std::optional<APFloat> c = other ? constantOf(other) : std::nullopt;
  if (!c || !c->isFiniteNonZero() || c->isNegative())
    return std::nullopt;
  return c->convertToDouble();
}

class FlashEmitter : TensorCoreEmitterBase {
public:
  FlashEmitter(OpBuilder &b, ComprehensionOp op, const FlashMatch &m,
               IRMapping &tensors, ValueRange outputs, ValueRange statsOutputs,
               Kernel &k, const FlashConfig &cfg)
      : TensorCoreEmitterBase(b, op.getLoc(), m.elementType), op(op), m(m),
        tensors(tensors), outputs(outputs), statsOutputs(statsOutputs), k(k),
        emitter(tensors, &k.func.getBody().front()), cfg(cfg), wgmma(cfg.wgmma),
        tmaKV(cfg.tmaKV), slots(cfg.slots), bm(cfg.bm), bn(cfg.bn),
        threads(cfg.threads()) {}

  LogicalResult emit();

private:
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }

  /// cp.async of `rows` rows of `read` (its `rowIndex` from `rowBase`, its
  /// contiguous index `colIndex` whole) into `tile[slot]`. With wgmma the
  /// tile is [slot, cols / 64, rows, 64]: 128-byte rows, the layout of the
  /// swizzled descriptors.
  void loadRows(ReadOp read, Value tile, Value slot, int64_t rows, int64_t cols,
                Value rowIndex, Value rowBase, int64_t rowExtent,
                Value colIndex);
  /// With wgmma: orders this thread's shared-memory writes (cp.async or
  /// stores) before the tensor cores' reads.
  void fenceForTensorCores() {
    if (wgmma)
      fenceProxyAsync();
  }
  /// The tensor coordinates of `read` at key j0 and column `col` of
  /// `colIndex` (the batch point's, the block's).
  SmallVector<Value> kvCoordinates(ReadOp read, Value j0, Value colIndex,
                                   Value col);
  /// The indices at the block's origin: the batch point's, the block's
  /// first query row, 0 for the key, value-column and dot-product indices.
  IRMapping getBlockIndices();

  ComprehensionOp op;
  FlashMatch m;
  IRMapping &tensors;
  ValueRange outputs;
  /// The running max and sum per row, if asked (emitFlashKernel).
  ValueRange statsOutputs;
  Kernel &k;
  BodyEmitter emitter;
  /// The tiles (KernelChoice.h), and their fields by name.
  FlashConfig cfg;
  bool wgmma;
  /// Keys and values by bulk tensor copies from a producer warpgroup
  /// (wgmma only): full and empty mbarriers per ring slot instead of a
  /// block barrier per step.
  bool tmaKV;
  /// Slots of the key/value ring.
  int64_t slots;
  int64_t bm, bn, threads;
  Value tid, lane, warp, row0;
  SmallVector<Value> batch;
};

void FlashEmitter::loadRows(ReadOp read, Value tile, Value slot, int64_t rows,
                            int64_t cols, Value rowIndex, Value rowBase,
                            int64_t rowExtent, Value colIndex) {
  Value memref = tensors.lookup(read.getTensor());
  int64_t chunks = cols / 8;
  for (int64_t c = 0; c < rows * chunks / threads; ++c) {
    Value id = add(tid, cst(c * threads));
    Value r = div(id, chunks), ch = rem(id, chunks);
    Value row = add(rowBase, r);
    Value valid = lt(row, rowExtent);
    IRMapping idx = getBlockIndices();
    idx.map(rowIndex, arith::MinUIOp::create(b, loc, row, cst(rowExtent - 1)));
    idx.map(colIndex, mul(ch, 8));
    SmallVector<Value> operands = llvm::map_to_vector(
        read.getIndices(), [&](Value v) { return idx.lookup(v); });
    std::optional<SmallVector<Value, 8>> coords =
        affine::expandAffineMap(b, loc, read.getMap(), operands);
    Value srcElements = arith::SelectOp::create(b, loc, valid, cst(8), cst(0));
    SmallVector<Value> dst{slot, r, mul(swizzle(r, ch), 8)};
    if (wgmma)
      dst = {slot, div(ch, 8), r, mul(swizzle(r, rem(ch, 8)), 8)};
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile, dst,
        memref, *coords, b.getIndexAttr(8), srcElements, b.getUnitAttr());
  }
}

IRMapping FlashEmitter::getBlockIndices() {
  IRMapping idx;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (batch[p])
      idx.map(op.getIndex(p), batch[p]);
  idx.map(op.getIndex(m.i), row0);
  idx.map(op.getIndex(m.d), cst(0));
  idx.map(m.j, cst(0));
  idx.map(m.red.getIndex(0), cst(0));
  return idx;
}

SmallVector<Value> FlashEmitter::kvCoordinates(ReadOp read, Value j0,
                                               Value colIndex, Value col) {
  IRMapping idx = getBlockIndices();
  idx.map(m.j, j0);
  idx.map(colIndex, col);
  SmallVector<Value> operands = llvm::map_to_vector(
      read.getIndices(), [&](Value v) { return idx.lookup(v); });
  return SmallVector<Value>(
      *affine::expandAffineMap(b, loc, read.getMap(), operands));
}

/// Long by design (about 430 lines): one kernel written top to bottom in the
/// order it runs (shared memory, barriers, the query tile, the key loop with
/// its ring, masks and rescaling, the epilogue). The values it threads
/// through (ring slots, accumulators, the running max and sum) would become
/// a parameter list per piece.
LogicalResult FlashEmitter::emit() {
  MLIRContext *ctx = b.getContext();
  Type out = cast<RankedTensorType>(op.getResultTypes()[0]).getElementType();
  bool approximate = out.isF16() || out.isBF16();
  emitter.setApproximate(approximate);
  emitter.setNvvmExp(true);
  // With 16-bit outputs (`approximate`) the softmax's exponentials are
  // ex2.approx.ftz of one fma each, the score's positive scale folded in
  // where it has one.
  std::optional<double> scale;
  if (approximate)
    scale = getPositiveScale(m);

  int64_t qBytes = bm * m.dqk * 2;
  int64_t kBytes = slots * bn * m.dqk * 2, vBytes = slots * bn * m.dv * 2;
  k.sharedBytes = cfg.sharedBytes(m);
  if (int64_t most = getTarget(op).getSharedPerBlock();
      k.sharedBytes + (tmaKV ? 16 * slots : 0) > most)
    return op.emitOpError()
           << "flash-attention kernel: "
           << k.sharedBytes + (tmaKV ? 16 * slots : 0)
           << " bytes of shared memory for its tiles, more than the " << most
           << " a block may have on " << getTarget(op).getChip();
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != m.i && p != m.d)
      batchCount *= op.getExtent(p);
  int64_t tilesM = static_cast<int64_t>(llvm::divideCeil(m.lq, bm));
  // Persistent: at most a block per multiprocessor (the tiles fill its
  // shared memory), each taking tiles bid, bid + grid, ... in batch-major
  // order (a batch point's keys and values stay in L2 while its tiles
  // run), as many blocks as balance the tiles' costs best.
  bool persistent = cfg.persistent && tmaKV;
  int64_t tiles = tilesM * batchCount;
  if (persistent)
    k.grid = {
        cfg.getPersistentBlocks(m, batchCount, getTarget(op).getSmCount()), 1,
        1};
  else if (batchCount > 65535)
    return op.emitOpError()
           << "has " << batchCount << " batch points: more than the grid holds";
  else
    k.grid = {tilesM, 1, batchCount};
  // With tmaKV, a producer warpgroup past the computing ones, and a full
  // and an empty mbarrier per ring slot past the tiles.
  k.block = {threads + (tmaKV ? 128 : 0), 1, 1};
  if (tmaKV)
    k.sharedBytes += 16 * slots;

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, 32);
  warp = div(tid, 32);
  // The block's query tile: its first row and its batch point. With a key
  // limit the last query tiles have the most keys: they start first.
  auto setTile = [&](Value tileM, Value linearBatch) {
    if (m.keyLimit)
      tileM = arith::SubIOp::create(b, loc, cst(tilesM - 1), tileM);
    row0 = mul(tileM, bm);
    batch = decomposeBatch(
        op, [&](unsigned p) { return p == m.i || p == m.d; }, linearBatch);
  };
  // Persistent: tile t's (batch-major, as the grid of one tile per block
  // orders them).
  auto setTileOf = [&](Value t) { setTile(rem(t, tilesM), div(t, tilesM)); };
  if (!persistent)
    setTile(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), Value());

  // The summand's constant factors, once.
  FailureOr<Value> factor = emitConstantFactors(b, emitter, m.red, m.factors);
  if (failed(factor))
    return failure();

  SharedMemory shared = getSharedMemory(/*align1024=*/wgmma);
  Value smemAddr = shared.address;
  auto view = [&](ArrayRef<int64_t> shape, int64_t offset) {
    return shared.view(*this, shape, offset);
  };
  Value tileQ, tileK, tileV;
  if (wgmma) {
    tileQ = view({1, m.dqk / 64, bm, 64}, 0);
    tileK = view({slots, m.dqk / 64, bn, 64}, qBytes);
    tileV = view({slots, m.dv / 64, bn, 64}, qBytes + kBytes);
  } else {
    tileQ = view({1, bm, m.dqk}, 0);
    tileK = view({2, bn, m.dqk}, qBytes);
    tileV = view({2, bn, m.dv}, qBytes + kBytes);
  }
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value e = m.red.getIndex(0);
  auto loadKV = [&](Value step, Value slot) {
    Value j0 = mul(step, bn);
    loadRows(m.k, tileK, slot, bn, m.dqk, m.j, j0, m.lk, e);
    loadRows(m.v, tileV, slot, bn, m.dv, m.j, j0, m.lk, op.getIndex(m.d));
  };

  Value mapK, mapV, fullBars, emptyBars;
  if (tmaKV) {
    auto param = [&](ReadOp read) {
      unsigned jPos =
          llvm::find(read.getIndices(), m.j) - read.getIndices().begin();
      TensorMapParam t;
      t.swizzleBytes = 128;
      unsigned rank = read.getMap().getNumResults();
      for (unsigned r = 0; r < rank; ++r)
        t.box.push_back(r + 1 == rank                                      ? 64
                        : read.getMap().getResult(r).isFunctionOfDim(jPos) ? bn
                                                                           : 1);
      t.buffer =
          cast<BlockArgument>(tensors.lookup(read.getTensor())).getArgNumber();
      return k.addTensorMap(std::move(t));
    };
    mapK = param(m.k);
    mapV = param(m.v);
    fullBars = add(smemAddr, cst(qBytes + kBytes + vBytes));
    emptyBars = add(fullBars, cst(8 * slots));
    initBarriers(tid, fullBars, slots, 1);
    initBarriers(tid, emptyBars, slots, threads / 128);
  }
  // Q by the computing threads, with the first keys and values (with
  // tmaKV the producer loads those, without waiting for Q: the computing
  // threads wait for Q among themselves, after the role split).
  auto loadQuery = [&] {
    loadRows(m.q, tileQ, cst(0), bm, m.dqk, op.getIndex(m.i), row0, m.lq, e);
    if (!tmaKV)
      loadKV(cst(0), cst(0));
    Value group = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                          ValueRange{});
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
    fenceForTensorCores();
  };
  if (!tmaKV)
    loadQuery();
  // With tmaKV: the barriers' initialisation is seen by every thread.
  gpu::BarrierOp::create(b, loc);

  // Q's operand fragments for the whole loop: rows warp * 16 + lane % 16.
  SmallVector<SmallVector<Value>> qFrag;
  Value warpRow = mul(warp, 16);
  for (int64_t kq = 0; kq < (wgmma ? 0 : m.dqk / 16); ++kq) {
    Value row = add(warpRow, rem(lane, 16));
    Value chunk = add(div(lane, 16), cst(2 * kq));
    qFrag.push_back(
        loadMatrix(tileQ, {cst(0), row, mul(swizzle(row, chunk), 8)}, false));
  }

  // Carried: the running max and sum of this thread's two rows, and the
  // output accumulators (dv / 8 tiles of 4).
  int64_t nO = m.dv / 8 * 4;
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init{negInf, negInf, f32(0), f32(0)};
  init.append(nO, f32(0));
  int64_t steps = static_cast<int64_t>(llvm::divideCeil(m.lk, bn));
  // The tile's key steps (ub) and those before the first that needs a
  // check (full).
  Value ub, full;
  auto setKeyBounds = [&] {
    ub = cst(steps);
    if (m.keyLimit) {
      // Key tiles wholly past the block's last row + c are masked: skipped.
      Value last = add(row0, cst(bm - 1 + *m.keyLimit));
      Value keyTiles =
          add(arith::FloorDivSIOp::create(b, loc, last, cst(bn)), cst(1));
      ub = arith::MinSIOp::create(
          b, loc, ub, arith::MaxSIOp::create(b, loc, keyTiles, cst(0)));
    }
    // Key tiles wholly inside the keys and (with a mask) wholly at or before
    // the block's first row + c need neither check: a first loop without
    // them, then the rest with them.
    full = cst(std::min(m.lk / bn, steps));
    if (m.keyLimit) {
      Value first = add(row0, cst(*m.keyLimit + 1));
      full = arith::MinSIOp::create(
          b, loc, full,
          arith::MaxSIOp::create(
              b, loc, arith::FloorDivSIOp::create(b, loc, first, cst(bn)),
              cst(0)));
      full = arith::MinSIOp::create(b, loc, full, ub);
    }
  };
  if (!persistent)
    setKeyBounds();
  // With a persistent grid: the loop over the block's tiles, threading the
  // ring's step of the tile's first key step (`ring`, 0 to start), its
  // body the insertion point, its tile and key bounds set.
  auto beginTileLoop = [&](Value ring) {
    auto loop = scf::ForOp::create(
        b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cst(tiles),
        cst(k.grid[0]), ValueRange{ring});
    b.setInsertionPointToStart(loop.getBody());
    setTileOf(loop.getInductionVar());
    setKeyBounds();
    return loop;
  };
  Value trueValue = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);

  // With tmaKV: the producer warpgroup's first thread fills ring slot
  // kb % slots with step kb's keys and values once both computing warpgroups
  // have released it (the empty barrier's phase of the round before; fresh
  // barriers pass the wait for parity 1); the computing warpgroups
  // continue below, in the else branch.
  scf::IfOp roles;
  if (tmaKV) {
    roles = scf::IfOp::create(b, loc,
                              arith::CmpIOp::create(b, loc,
                                                    arith::CmpIPredicate::uge,
                                                    tid, cst(threads)),
                              /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getThenRegion().front());
    NVVM::SetMaxRegisterOp::create(
        b, loc, b.getI32IntegerAttr(40),
        NVVM::SetMaxRegisterActionAttr::get(
            ctx, NVVM::SetMaxRegisterAction::decrease));
    auto one = scf::IfOp::create(b, loc,
                                 arith::CmpIOp::create(b, loc,
                                                       arith::CmpIPredicate::eq,
                                                       tid, cst(threads)),
                                 /*withElseRegion=*/false);
    b.setInsertionPointToStart(&one.getThenRegion().front());
    // The ring's step: the tile's key step kb past `base`, the steps of
    // the block's earlier tiles.
    Value base = cst(0);
    scf::ForOp producerTiles;
    if (persistent) {
      producerTiles = beginTileLoop(base);
      base = producerTiles.getRegionIterArgs()[0];
    }
    auto loop = scf::ForOp::create(b, loc, cst(0), ub, cst(1));
    b.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    Value ring = add(base, kb);
    Value slot = rem(ring, slots);
    waitBarrier(emptyBars, slot, rem(add(div(ring, slots), cst(1)), 2));
    Value bar = toSharedPointer(add(fullBars, mul(slot, 8)));
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, Type(), bar,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                     bn * (m.dqk + m.dv) * 2),
        NVVM::MemScopeKindAttr::get(ctx, NVVM::MemScopeKind::CTA),
        b.getBoolAttr(false), Value());
    Value j0 = mul(kb, bn);
    for (int64_t blk = 0; blk < m.dqk / 64; ++blk)
      bulkTensorCopy(mapK, kvCoordinates(m.k, j0, e, cst(64 * blk)),
                     add(smemAddr, add(cst(qBytes + blk * bn * 128),
                                       mul(slot, bn * m.dqk * 2))),
                     bar);
    for (int64_t blk = 0; blk < m.dv / 64; ++blk)
      bulkTensorCopy(mapV,
                     kvCoordinates(m.v, j0, op.getIndex(m.d), cst(64 * blk)),
                     add(smemAddr, add(cst(qBytes + kBytes + blk * bn * 128),
                                       mul(slot, bn * m.dv * 2))),
                     bar);
    if (producerTiles) {
      b.setInsertionPointAfter(loop);
      scf::YieldOp::create(b, loc, add(base, ub));
    }
  }
  // The ring's step of the tile's first key step (the steps of the
  // block's earlier tiles), and with a persistent grid the loop over the
  // block's tiles, the rest of the kernel its body.
  Value ringBase;
  scf::ForOp tileLoop;
  if (roles) {
    b.setInsertionPointToStart(&roles.getElseRegion().front());
    ringBase = cst(0);
    // Two computing warpgroups share what the producer leaves: 232 each.
    NVVM::SetMaxRegisterOp::create(
        b, loc, b.getI32IntegerAttr(232),
        NVVM::SetMaxRegisterActionAttr::get(
            ctx, NVVM::SetMaxRegisterAction::increase));
    if (persistent) {
      tileLoop = beginTileLoop(ringBase);
      ringBase = tileLoop.getRegionIterArgs()[0];
      // Both warpgroups are done with the last tile's Q.
      syncNamedBarrier(cst(3), threads);
    }
    // Q, its rows written by both warpgroups: named barrier 3 (the
    // computing threads; 1 and 2 are the ping-pong's).
    loadQuery();
    syncNamedBarrier(cst(3), threads);
  }

  Value wgIdx = div(tid, 128);
  Value warpRowQ = add(row0, add(warpRow, div(lane, 4)));
  bool scoreReads = llvm::any_of(m.scoreOps, [](Operation *o) {
    bool reads = false;
    o->walk([&](ReadOp) { reads = true; });
    return reads;
  });
  // The score code on every element of S (in place): rows lane / 4 (+ 8),
  // columns 2 (lane % 4) (+ 1) of each n8 tile of key step kb; keys past
  // the end are -inf.
  auto applyScoreCode = [&](SmallVector<Value> &s, Value kb,
                            bool masked) -> LogicalResult {
    Value kCol = add(mul(kb, bn), mul(rem(lane, 4), 2));
    for (int64_t t = 0; t < bn / 8; ++t) {
      for (int64_t x = 0; x < 4; ++x) {
        Value iv = x >= 2 ? add(warpRowQ, cst(8)) : warpRowQ;
        Value jv = add(kCol, cst(t * 8 + x % 2));
        Value raw = s[t * 4 + x];
        if (*factor)
          raw = arith::MulFOp::create(b, loc, raw, *factor);
        IRMapping mapping;
        for (unsigned p = 0; p < op.getNumParallel(); ++p)
          if (batch[p])
            mapping.map(op.getIndex(p), batch[p]);
        // Rows and keys past the end (discarded below) read in bounds
        // (index arithmetic alone needs no clamp).
        if (scoreReads) {
          mapping.map(op.getIndex(m.i),
                      arith::MinUIOp::create(b, loc, iv, cst(m.lq - 1)));
          mapping.map(m.j, arith::MinUIOp::create(b, loc, jv, cst(m.lk - 1)));
        } else {
          mapping.map(op.getIndex(m.i), iv);
          mapping.map(m.j, jv);
        }
        mapping.map(m.red.getResult(0), raw);
        if (!masked && m.maskCondition)
          mapping.map(m.maskCondition->getResult(0), trueValue);
        for (Operation *inner : m.scoreOps)
          if ((masked || inner != m.maskCondition) &&
              failed(emitter.emit(b, inner, mapping)))
            return failure();
        Value score = mapping.lookupOrNull(m.score);
        if (!score)
          return op.emitOpError() << "flash kernel: the score is not computed "
                                     "in the body";
        // With the scale in the exponent: the dot product, masked (the
        // product by c, emitted above, goes unused).
        if (scale)
          score =
              masked && m.maskCondition
                  ? arith::SelectOp::create(
                        b, loc, mapping.lookup(m.maskCondition->getResult(0)),
                        raw, negInf)
                        .getResult()
                  : raw;
        if (masked)
          score = arith::SelectOp::create(b, loc, lt(jv, m.lk), score, negInf);
        s[t * 4 + x] = score;
      }
    }
    return success();
  };
  // The online-softmax step per row r (elements x < 2: r = 0, else r = 1):
  // the scores s become exp(s - max), the running max and sum move on;
  // returns the factor that rescales what was accumulated before.
  auto updateSoftmax = [&](SmallVector<Value> &s, SmallVector<Value> &rowMax,
                           SmallVector<Value> &rowSum) {
    SmallVector<Value> alpha(2);
    for (int64_t r = 0; r < 2; ++r) {
      Value mx = rowMax[r];
      for (int64_t t = 0; t < bn / 8; ++t)
        for (int64_t x = 2 * r; x < 2 * r + 2; ++x)
          mx = arith::MaximumFOp::create(b, loc, mx, s[t * 4 + x]);
      mx = rowReduce(mx, /*max=*/true);
      // A row with no finite score yet subtracts 0 (exp(-inf) = 0).
      Value isInf =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mx, negInf);
      Value safe = arith::SelectOp::create(b, loc, isInf, f32(0), mx);
      // With 16-bit outputs exp(v - max) is 2^(v log2(e) - max log2(e)):
      // one fma and ex2.approx.ftz per score (results below 2^-126 flush
      // to 0, nothing next to the row's largest term of 1).
      // With the scale c in the exponent, s and the running max are of
      // the dot product: 2^(s c log2(e) - max c log2(e)).
      double log2e = 1.4426950408889634 * scale.value_or(1.0);
      Value negScaledMax =
          approximate
              ? arith::MulFOp::create(b, loc, safe, f32(-log2e)).getResult()
              : Value();
      auto expOf = [&](Value v) -> Value {
        if (approximate)
          return emitNvvmExp2(
              b, loc, math::FmaOp::create(b, loc, v, f32(log2e), negScaledMax));
        auto ex =
            math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, v, safe));
        allowApproximation(ex);
        return ex.getResult();
      };
      alpha[r] = expOf(rowMax[r]);
      Value sum = arith::MulFOp::create(b, loc, rowSum[r], alpha[r]);
      for (int64_t t = 0; t < bn / 8; ++t)
        for (int64_t x = 2 * r; x < 2 * r + 2; ++x) {
          s[t * 4 + x] = expOf(s[t * 4 + x]);
          sum = arith::AddFOp::create(b, loc, sum, s[t * 4 + x]);
        }
      rowMax[r] = mx;
      rowSum[r] = sum;
    }
    return alpha;
  };
  auto rescale = [&](MutableArrayRef<Value> o, ArrayRef<Value> alpha) {
    for (int64_t t = 0; t < m.dv / 8; ++t)
      for (int64_t x = 0; x < 4; ++x)
        o[t * 4 + x] =
            arith::MulFOp::create(b, loc, o[t * 4 + x], alpha[x / 2]);
  };
  // With wgmma: S = Q K^T of ring slot `slot`, issued (this warpgroup's 64
  // rows of Q; K as the [n, k] operand; a k16 step is 32 bytes along a
  // 128-byte row, 64-column blocks apart).
  auto issueScores = [&](Value slot) {
    Value qBase = add(smemAddr, mul(wgIdx, 64 * 128));
    Value kBase = add(smemAddr, add(cst(qBytes), mul(slot, bn * m.dqk * 2)));
    return issueWgmma({}, bn, m.dqk / 16, /*accumulate=*/false,
                      /*bTransposed=*/false, bn, [&](int64_t kq) {
                        int64_t blk = kq / 4, in = (kq % 4) * 32;
                        return std::make_pair(
                            add(qBase, cst(blk * bm * 128 + in)),
                            add(kBase, cst(blk * bn * 128 + in)));
                      });
  };
  // With wgmma: O += P V of ring slot `slot`, P (packed) from registers,
  // issued.
  auto issueValues = [&](ArrayRef<Value> o, ArrayRef<Value> p, Value slot) {
    return issueKeyProduct(o, p, bn, m.dv, smemAddr, qBytes + kBytes, slot);
  };

  // One key step, its products waited for in turn (mma.sync, or wgmma with
  // keys and values by cp.async).
  auto emitStep = [&](Value kb, ValueRange carried, bool masked,
                      SmallVector<Value> &yield) -> LogicalResult {
    SmallVector<Value> rowMax{carried[0], carried[1]};
    SmallVector<Value> rowSum{carried[2], carried[3]};
    SmallVector<Value> o(carried.drop_front(4));
    Value slot = rem(kb, slots);
    // The next step's keys and values, into the other slot (every warp
    // finished reading it before the barrier that ended the last step).
    Value next = add(kb, cst(1));
    loadKV(next, rem(next, 2));
    Value g = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                      ValueRange{});

    // S = Q K^T: bn / 8 tiles of m16n8.
    SmallVector<Value> s(bn / 8 * 4, f32(0));
    if (wgmma) {
      Value st = issueScores(slot);
      waitWgmma();
      s = takeWgmma(st, bn);
    }
    for (int64_t kq = 0; kq < (wgmma ? 0 : m.dqk / 16); ++kq) {
      for (int64_t n2 = 0; n2 < bn / 16; ++n2) {
        Value row = add(cst(n2 * 16), add(rem(lane, 8), mul(div(lane, 16), 8)));
        Value chunk = add(rem(div(lane, 8), 2), cst(2 * kq));
        SmallVector<Value> kr =
            loadMatrix(tileK, {slot, row, mul(swizzle(row, chunk), 8)}, false);
        mmaSync(qFrag[kq], {kr[0], kr[1]},
                MutableArrayRef<Value>(s).slice(n2 * 8, 4));
        mmaSync(qFrag[kq], {kr[2], kr[3]},
                MutableArrayRef<Value>(s).slice(n2 * 8 + 4, 4));
      }
    }
    if (failed(applyScoreCode(s, kb, masked)))
      return failure();
    SmallVector<Value> alpha = updateSoftmax(s, rowMax, rowSum);
    rescale(o, alpha);
    // O += P V, V [keys, dv] read transposed, P's accumulators the A
    // operand.
    accumulateKeyProduct(o, s, bn, m.dv, wgmma, smemAddr, tileV,
                         qBytes + kBytes, slot, lane);

    nvgpu::DeviceAsyncWaitOp::create(b, loc, g, b.getI32IntegerAttr(0));
    fenceForTensorCores();
    gpu::BarrierOp::create(b, loc);
    yield = {rowMax[0], rowMax[1], rowSum[0], rowSum[1]};
    yield.append(o);
    return success();
  };

  // With keys and values from the producer (FA3's intra-warpgroup
  // overlap): step kb issues S(kb) and then O += P(kb - 1) V(kb - 1), and
  // runs the softmax of S(kb) while the second product is on the tensor
  // cores; the slot of kb - 1 is released after it. Carried past the
  // running max, sum and O: P(kb - 1), packed as the A operand.
  int64_t nP = bn / 4;
  // Ping-pong (FA3): the two warpgroups take turns issuing their products,
  // so that one's softmax runs while the other's products do. Warpgroup w
  // waits on named barrier 1 + w (the computing threads: its own 128 and
  // the other's arrival), issues, and arrives on the other's. Warpgroup 0's
  // first turn is its own arrival; its last sync takes warpgroup 1's last
  // arrival.
  bool pingPong = tmaKV;
  auto takeTurn = [&] {
    if (pingPong)
      syncNamedBarrier(add(wgIdx, cst(1)), threads);
  };
  auto passTurn = [&] {
    if (pingPong)
      arriveNamedBarrier(arith::SubIOp::create(b, loc, cst(2), wgIdx), threads);
  };
  auto firstWarpgroup = [&](function_ref<void()> body) {
    if (!pingPong)
      return;
    auto ifOp = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, wgIdx, cst(0)),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  };
  auto emitPipelinedStep = [&](Value kb, ValueRange carried, bool masked,
                               SmallVector<Value> &yield) -> LogicalResult {
    SmallVector<Value> rowMax{carried[0], carried[1]};
    SmallVector<Value> rowSum{carried[2], carried[3]};
    SmallVector<Value> o(carried.slice(4, nO));
    SmallVector<Value> p(carried.drop_front(4 + nO));
    Value ring = add(ringBase, kb);
    Value slot = rem(ring, slots);
    Value prev = rem(add(ring, cst(slots - 1)), slots);
    waitBarrier(fullBars, slot, rem(div(ring, slots), 2));
    takeTurn();
    Value scores = issueScores(slot);
    Value values = issueValues(o, p, prev);
    passTurn();
    waitWgmma(1);
    SmallVector<Value> s = takeWgmma(scores, bn);
    if (failed(applyScoreCode(s, kb, masked)))
      return failure();
    SmallVector<Value> alpha = updateSoftmax(s, rowMax, rowSum);
    waitWgmma(0);
    o = takeWgmma(values, m.dv);
    releaseByWarpgroup(tid, emptyBars, prev);
    rescale(o, alpha);
    yield = {rowMax[0], rowMax[1], rowSum[0], rowSum[1]};
    yield.append(o);
    yield.append(packKeyOperand(s, bn));
    return success();
  };

  auto emitLoop = [&](Value lb, Value ubound, ValueRange initial,
                      bool masked) -> FailureOr<scf::ForOp> {
    auto loop = scf::ForOp::create(b, loc, lb, ubound, cst(1), initial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> yield;
    LogicalResult built =
        tmaKV ? emitPipelinedStep(loop.getInductionVar(),
                                  loop.getRegionIterArgs(), masked, yield)
              : emitStep(loop.getInductionVar(), loop.getRegionIterArgs(),
                         masked, yield);
    if (failed(built))
      return failure();
    scf::YieldOp::create(b, loc, yield);
    return loop;
  };
  SmallVector<Value> res;
  if (tmaKV) {
    // Step 0's scores and softmax before the loop, its P V in step 1, the
    // last step's P V after it (none of them if no key tile is visited).
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, ub, cst(0));
    SmallVector<Type> types(4 + nO, b.getF32Type());
    types.append(nP, b.getI32Type());
    firstWarpgroup([&] { arriveNamedBarrier(cst(1), threads); });
    auto prologue = scf::IfOp::create(b, loc, types, any,
                                      /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&prologue.getThenRegion().front());
      Value slot0 = rem(ringBase, slots);
      waitBarrier(fullBars, slot0, rem(div(ringBase, slots), 2));
      takeTurn();
      Value scores = issueScores(slot0);
      passTurn();
      waitWgmma();
      SmallVector<Value> s = takeWgmma(scores, bn);
      // Masked: the first tile may hold the end of the keys or the mask.
      if (failed(applyScoreCode(s, cst(0), /*masked=*/true)))
        return failure();
      SmallVector<Value> rowMax{negInf, negInf}, rowSum{f32(0), f32(0)};
      updateSoftmax(s, rowMax, rowSum);
      SmallVector<Value> yield{rowMax[0], rowMax[1], rowSum[0], rowSum[1]};
      yield.append(nO, f32(0));
      yield.append(packKeyOperand(s, bn));
      scf::YieldOp::create(b, loc, yield);
      b.setInsertionPointToStart(&prologue.getElseRegion().front());
      SmallVector<Value> none(init);
      none.append(nP, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
      scf::YieldOp::create(b, loc, none);
    }
    Value one = cst(1);
    Value fullFrom1 = arith::MaxSIOp::create(b, loc, full, one);
    FailureOr<scf::ForOp> unmasked =
        emitLoop(one, fullFrom1, prologue.getResults(), false);
    if (failed(unmasked))
      return failure();
    FailureOr<scf::ForOp> loop =
        emitLoop(fullFrom1, ub, unmasked->getResults(), true);
    if (failed(loop))
      return failure();
    ValueRange last = loop->getResults();
    auto epilogue = scf::IfOp::create(b, loc, TypeRange(last.slice(4, nO)), any,
                                      /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&epilogue.getThenRegion().front());
      SmallVector<Value> o(last.slice(4, nO)), p(last.drop_front(4 + nO));
      Value lastSlot =
          rem(add(ringBase, arith::SubIOp::create(b, loc, ub, one)), slots);
      takeTurn();
      Value values = issueValues(o, p, lastSlot);
      passTurn();
      waitWgmma();
      // Released: with a persistent grid the producer refills it.
      releaseByWarpgroup(tid, emptyBars, lastSlot);
      scf::YieldOp::create(b, loc, takeWgmma(values, m.dv));
      b.setInsertionPointToStart(&epilogue.getElseRegion().front());
      scf::YieldOp::create(b, loc, last.slice(4, nO));
    }
    firstWarpgroup([&] { syncNamedBarrier(cst(1), threads); });
    llvm::append_range(res, last.take_front(4));
    llvm::append_range(res, epilogue.getResults());
  } else {
    FailureOr<scf::ForOp> unmasked = emitLoop(cst(0), full, init, false);
    if (failed(unmasked))
      return failure();
    FailureOr<scf::ForOp> loop =
        emitLoop(full, ub, unmasked->getResults(), true);
    if (failed(loop))
      return failure();
    llvm::append_range(res, loop->getResults());
  }

  // O / l, stored two columns at a time, rows past the end skipped.
  Value qRow = add(row0, add(warpRow, div(lane, 4)));
  for (int64_t r = 0; r < 2; ++r) {
    Value l = rowReduce(res[2 + r], /*max=*/false);
    auto inv = arith::DivFOp::create(b, loc, f32(1), l);
    if (approximate)
      allowApproximation(inv);
    Value iv = r ? add(qRow, cst(8)) : qRow;
    if (!statsOutputs.empty()) {
      // The row's running max (agreed by its 4 lanes) and sum, by its
      // first lane.
      Value first = arith::AndIOp::create(
          b, loc, lt(iv, m.lq),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem(lane, 4),
                                cst(0)));
      auto ifStats = scf::IfOp::create(b, loc, first, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifStats.getThenRegion().front());
      SmallVector<Value> idx;
      for (unsigned p = 0; p < op.getNumParallel(); ++p)
        if (p != m.d)
          idx.push_back(p == m.i ? iv : batch[p]);
      // (With the scale in the exponent the running max is of the dot
      // product: c max x = max c x, c > 0.)
      Value rowMax = res[r];
      if (scale)
        rowMax = arith::MulFOp::create(b, loc, rowMax, f32(*scale));
      for (auto [v, buffer] : llvm::zip(ValueRange{rowMax, l}, statsOutputs)) {
        Type e = cast<MemRefType>(buffer.getType()).getElementType();
        if (e != v.getType())
          v = arith::TruncFOp::create(b, loc, e, v);
        memref::StoreOp::create(b, loc, v, buffer, idx);
      }
    }
    auto ifOp = scf::IfOp::create(b, loc, lt(iv, m.lq), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    for (int64_t t = 0; t < m.dv / 8; ++t) {
      Value dcol = add(mul(rem(lane, 4), 2), cst(t * 8));
      Value pair = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, b.getF32Type()),
          ValueRange{
              arith::MulFOp::create(b, loc, res[4 + t * 4 + 2 * r], inv),
              arith::MulFOp::create(b, loc, res[4 + t * 4 + 2 * r + 1], inv)});
      if (!out.isF32())
        pair = arith::TruncFOp::create(b, loc, VectorType::get({2}, out), pair);
      SmallVector<Value> idx;
      for (unsigned p = 0; p < op.getNumParallel(); ++p)
        idx.push_back(p == m.i ? iv : p == m.d ? dcol : batch[p]);
      // Pairs of columns start at even d, the output's last dimension (a
      // multiple of 8 long); buffers are 16-byte aligned (the runtimes
      // check).
      vector::StoreOp::create(b, loc, pair, outputs[0], idx,
                              /*nontemporal=*/false,
                              llvm::Align(2 * out.getIntOrFloatBitWidth() / 8));
    }
  }
  if (tileLoop)
    scf::YieldOp::create(b, loc, add(ringBase, ub));
  // The kernel's return goes after the role split.
  if (roles)
    b.setInsertionPointAfter(roles);
  return success();
}

} // namespace

namespace {

/// An online_softmax reduction as a flash-attention kernel.
struct FlashKernelPattern : KernelPattern {
  FlashKernelPattern() : KernelPattern("flash") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::Flash)
      return notifyMatchFailure(r.op, "not a flash-attention kernel");
    // The softmax statistics, if a sibling asks for them.
    bool stats =
        r.sibling && r.sibling.getBuiltinMonoid() == MonoidKind::SoftmaxNorm;
    if (r.choice.flashConfig.simt) {
      if (failed(emitSimtFlashKernel(
              r.b, r.op, *r.choice.flash, *r.choice.flashConfig.simt, r.tensors,
              r.outputs, stats ? r.siblingOutputs : ValueRange(), r.k)))
        return KernelMatch::Error;
      r.k.wroteSibling = stats;
      return KernelMatch::Built;
    }
    if (failed(FlashEmitter(r.b, r.op, *r.choice.flash, r.tensors, r.outputs,
                            stats ? r.siblingOutputs : ValueRange(), r.k,
                            r.choice.flashConfig)
                   .emit()))
      return KernelMatch::Error;
    r.k.wroteSibling = stats;
    return KernelMatch::Built;
  }
};

} // namespace

void mlir::tang::populateFlashKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<FlashKernelPattern>());
}
