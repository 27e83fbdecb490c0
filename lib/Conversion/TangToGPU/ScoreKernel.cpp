//===- ScoreKernel.cpp - reductions over keys of dot-product scores -------===//
//
// A reduction over one index y (the keys) whose body computes scores from
// dot products, nested add-reductions over an index e of their own,
//
//   s_k(x, y) = c_k sum_e A_k[.., x, e] B_k[.., y, e]     (one or two)
//
// of 16-bit reads (A_k uses the row index x, B_k the key index y), is
// emitted on tensor cores when it is
//
//   add:          O[.., x, c] = sum_y g(x, y) W[.., y, c]
//   softmax_norm: (m, l)[.., x] = (max_y g(x, y), sum_y exp(g(x, y) - m))
//
// with g any scalar code of the dot products, the indices and other reads
// (probabilities from saved row statistics, a mask). These are the kernels
// of attention's gradient as --tang-grad derives it: dQ (s = Q K^T and
// dP = dO V^T, W = K), dK and dV (rows are the keys, y the queries), and
// the saved (m, l); matched on the graph's shape, never on names.
//
// A block of 4 warps owns 64 rows (16 per warp). The A operands' row tiles
// stay in shared memory; the key-indexed tiles (the B operands and W, one
// tile where two reads address the same rows) stream through shared memory
// in 64-key steps (cp.async, double buffered, zero-filled past the end).
// Per step and warp: the dot products on mma.sync m16n8k16, g on every
// element in registers, then O += G W on mma.sync with G's accumulators
// reused as the A operand (the m16n8 layout of two n8 tiles is the m16k16
// operand layout), or the running max and sum. With wgmma (sm_90a) the
// block is one warpgroup: the tiles are 128-byte swizzled blocks of 64
// columns, the dot products and G W are wgmma, G goes through shared
// memory.
//
// A second reduction over the same rows and keys whose dot products are
// among the first's (attention's dV beside dK) can share the kernel: the
// dot products and the streamed tiles once, a G and an accumulator set per
// reduction.
//
//===----------------------------------------------------------------------===//

#include "KernelForm.h"

#include "BodyEmitter.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "TensorCoreEmitter.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// A tile streamed through shared memory per key step: `read`'s rows at
/// the keys, its contiguous index `col` whole.
struct StreamedTile {
  ReadOp read;
  Value col;
  int64_t width;
  Value tile;
  /// Byte offset of slot 0 in the kernel's shared memory.
  int64_t offset;

  /// Whether `other`'s rows with `otherCol` whole are this tile: one
  /// tensor through one map, the indices differing only in the contiguous
  /// one (K in Q K^T and in dS K).
  /// `sameIndex` says whether two index values (of the two comprehensions
  /// a kernel may compute) are the same index.
  bool holds(ReadOp other, Value otherCol,
             function_ref<bool(Value, Value)> sameIndex) const {
    ReadOp read = this->read;
    return read.getTensor() == other.getTensor() &&
           read.getMap() == other.getMap() &&
           llvm::all_of(llvm::zip(read.getIndices(), other.getIndices()),
                        [&](auto pair) {
                          auto [u, v] = pair;
                          return (u == col && v == otherCol) ||
                                 (u != col && v != otherCol && sameIndex(u, v));
                        });
  }
};

/// One comprehension a score kernel computes: its match, its outputs, and
/// for each of its dot products the kernel's (the first part's) equal one.
struct ScorePart {
  ComprehensionOp op;
  ScoreMatch m;
  ValueRange outputs;
  SmallVector<unsigned> dotOf;
};

class ScoreEmitter : TensorCoreEmitterBase {
public:
  ScoreEmitter(OpBuilder &b, ArrayRef<ScorePart> parts, IRMapping &tensors,
               Kernel &k, const ScoreConfig &cfg)
      : TensorCoreEmitterBase(b, parts[0].op->getLoc(), parts[0].m.elementType),
        parts(parts), op(parts[0].op), m(parts[0].m), tensors(tensors),
        outputs(parts[0].outputs), k(k),
        emitter(tensors, &k.func.getBody().front()), wgmma(cfg.wgmma),
        bn(cfg.bn), bm(cfg.bm), threads(cfg.threads()) {
    // Key tiles are skipped only where every part's contributions vanish.
    for (const ScorePart &p : this->parts.drop_front()) {
      if (p.m.keysUpTo != m.keysUpTo)
        m.keysUpTo.reset();
      if (p.m.keysFrom != m.keysFrom)
        m.keysFrom.reset();
    }
  }

  LogicalResult emit();

private:
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  /// The indices at the block's origin: the batch point's, the block's
  /// first row, 0 for the key, the output column and the dot products'.
  IRMapping getBlockIndices();
  /// cp.async of `rows` rows of `read` (its `rowIndex` from `rowBase`,
  /// `colIndex` whole, `cols` wide) into tile[slot] ([slot, row, col],
  /// 16-byte chunks swizzled by row).
  void loadRows(ReadOp read, Value tile, Value slot, int64_t rows, int64_t cols,
                Value rowIndex, Value rowBase, int64_t rowExtent,
                Value colIndex);
  /// The streamed tile holding `read`'s rows with `col` whole.
  const StreamedTile &getStreamed(ReadOp read, Value col);
  /// Whether `u` and `v` are the same index of the parts (the same
  /// position among their comprehensions' indices).
  bool sameIndex(Value u, Value v);
  /// Emits the constant factors of the dot products (once per kernel).
  LogicalResult emitFactors();

  ArrayRef<ScorePart> parts;
  /// The first part: its dot products are the kernel's.
  ComprehensionOp op;
  ScoreMatch m;
  IRMapping &tensors;
  ValueRange outputs;
  Kernel &k;
  BodyEmitter emitter;
  SmallVector<StreamedTile> streamed;
  SmallVector<Value> factor;
  /// wgmma (sm_90a): a warpgroup of 64 rows, operands from 128-byte
  /// swizzled tiles of 64 columns ([slot, cols / 64, rows, 64]), G from
  /// registers; else mma.sync, 4 warps of 16 rows.
  bool wgmma;
  /// Keys per step; rows per block: one warpgroup (wgmma) or 4 warps
  /// (mma.sync).
  int64_t bn, bm, threads;
  Value tid, lane, warp, row0;
  SmallVector<Value> batch;
};

IRMapping ScoreEmitter::getBlockIndices() {
  IRMapping idx;
  for (const ScorePart &part : parts) {
    ComprehensionOp pop = part.op;
    for (unsigned p = 0; p < pop.getNumParallel(); ++p)
      if (batch[p])
        idx.map(pop.getIndex(p), batch[p]);
    idx.map(pop.getIndex(m.x), row0);
    if (m.c)
      idx.map(pop.getIndex(*m.c), cst(0));
    idx.map(part.m.y, cst(0));
    for (const ScoreDot &dot : part.m.dots) {
      ComprehensionOp red = dot.red;
      idx.map(red.getIndex(0), cst(0));
    }
  }
  return idx;
}

bool ScoreEmitter::sameIndex(Value u, Value v) {
  if (u == v)
    return true;
  auto position = [&](Value w) -> int {
    auto arg = dyn_cast<BlockArgument>(w);
    if (!arg)
      return -1;
    for (const ScorePart &part : parts) {
      ComprehensionOp pop = part.op;
      if (arg.getOwner() == &pop.getBodyBlock())
        return arg.getArgNumber();
    }
    return -1;
  };
  int pu = position(u);
  return pu >= 0 && pu == position(v);
}

void ScoreEmitter::loadRows(ReadOp read, Value tile, Value slot, int64_t rows,
                            int64_t cols, Value rowIndex, Value rowBase,
                            int64_t rowExtent, Value colIndex) {
  Value memref = tensors.lookup(read.getTensor());
  int64_t chunks = cols / 8;
  for (int64_t c = 0; c < rows * chunks / threads; ++c) {
    Value id = add(tid, cst(c * threads));
    Value r = div(id, chunks), ch = rem(id, chunks);
    Value row = add(rowBase, r);
    IRMapping idx = getBlockIndices();
    idx.map(rowIndex, minU(row, rowExtent - 1));
    idx.map(colIndex, mul(ch, 8));
    SmallVector<Value> operands = llvm::map_to_vector(
        read.getIndices(), [&](Value v) { return idx.lookup(v); });
    std::optional<SmallVector<Value, 8>> coords =
        affine::expandAffineMap(b, loc, read.getMap(), operands);
    Value srcElements =
        arith::SelectOp::create(b, loc, lt(row, rowExtent), cst(8), cst(0));
    SmallVector<Value> dst{slot, r, mul(swizzle(r, ch), 8)};
    if (wgmma)
      dst = {slot, div(ch, 8), r, mul(swizzle(r, rem(ch, 8)), 8)};
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile, dst,
        memref, *coords, b.getIndexAttr(8), srcElements, b.getUnitAttr());
  }
}

const StreamedTile &ScoreEmitter::getStreamed(ReadOp read, Value col) {
  for (const StreamedTile &t : streamed)
    if (t.holds(read, col, [&](Value u, Value v) { return sameIndex(u, v); }))
      return t;
  llvm_unreachable("every streamed read has a tile");
}

LogicalResult ScoreEmitter::emitFactors() {
  for (ScoreDot &dot : m.dots) {
    FailureOr<Value> f = emitConstantFactors(b, emitter, dot.red, dot.factors);
    if (failed(f))
      return failure();
    factor.push_back(*f);
  }
  return success();
}

/// Long by design (about 420 lines), like FlashEmitter::emit: one kernel in
/// the order it runs (streamed tiles, the key loop, per-key scores of one
/// or two dot products, masks, the key products, the epilogue of each
/// part), whose loop-carried values would otherwise be threaded through
/// every piece.
LogicalResult ScoreEmitter::emit() {
  MLIRContext *ctx = b.getContext();
  bool approximate = llvm::all_of(op.getResultTypes(), [](Type t) {
    Type e = cast<RankedTensorType>(t).getElementType();
    return e.isF16() || e.isBF16();
  });
  emitter.setApproximate(approximate);
  emitter.setNvvmExp(true);

  // Shared memory: the row tiles of the A operands, then the streamed
  // tiles (two slots each).
  SmallVector<std::tuple<ReadOp, Value, int64_t>> toStream;
  for (ScoreDot &dot : m.dots)
    toStream.emplace_back(dot.b, dot.red.getIndex(0), dot.red.getExtent(0));
  for (const ScorePart &part : parts) {
    ComprehensionOp pop = part.op;
    if (part.m.w)
      toStream.emplace_back(part.m.w, pop.getIndex(*m.c), part.m.dc);
  }
  int64_t bytes = 0;
  SmallVector<int64_t> aOffsets;
  for (ScoreDot &dot : m.dots) {
    aOffsets.push_back(bytes);
    bytes += bm * dot.red.getExtent(0) * 2;
  }
  SmallVector<int64_t> streamOffsets;
  for (auto [read, col, width] : toStream) {
    if (llvm::any_of(
            streamed, [&, read = read, col = col](const StreamedTile &t) {
              return t.holds(read, col,
                             [&](Value u, Value v) { return sameIndex(u, v); });
            }))
      continue;
    streamed.push_back({read, col, width, Value(), bytes});
    streamOffsets.push_back(bytes);
    bytes += 2 * bn * width * 2;
  }
  // With wgmma, the 1024-byte alignment of the swizzled tiles.
  if (wgmma)
    bytes += 1024;
  k.sharedBytes = bytes;
  if (int64_t most = getTarget(op).getSharedPerBlock(); bytes > most)
    return op.emitOpError()
           << "score kernel: " << bytes
           << " bytes of shared memory, more than the " << most
           << " a block may have on " << getTarget(op).getChip();
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != m.x && p != m.c)
      batchCount *= op.getExtent(p);
  k.grid = {static_cast<int64_t>(llvm::divideCeil(m.lx, bm)), 1, batchCount};
  k.block = {threads, 1, 1};

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, 32);
  warp = div(tid, 32);
  // With keys up to a limit, the last row tiles have the most keys: they
  // start first.
  Value tileX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (m.keysUpTo)
    tileX = arith::SubIOp::create(b, loc, cst(k.grid[0] - 1), tileX);
  row0 = mul(tileX, bm);
  batch = decomposeBatch(op, [&](unsigned p) { return p == m.x || p == m.c; });
  if (failed(emitFactors()))
    return failure();

  SharedMemory shared = getSharedMemory(/*align1024=*/wgmma);
  Value smemAddr = shared.address;
  auto view = [&](ArrayRef<int64_t> shape, int64_t offset) {
    return shared.view(*this, shape, offset);
  };
  SmallVector<Value> tileA;
  for (auto [dot, offset] : llvm::zip(m.dots, aOffsets)) {
    int64_t e = dot.red.getExtent(0);
    tileA.push_back(wgmma ? view({1, e / 64, bm, 64}, offset)
                          : view({1, bm, e}, offset));
  }
  for (auto [t, offset] : llvm::zip(streamed, streamOffsets))
    t.tile = wgmma ? view({2, t.width / 64, bn, 64}, offset)
                   : view({2, bn, t.width}, offset);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto loadStep = [&](Value step, Value slot) {
    Value y0 = mul(step, bn);
    for (const StreamedTile &t : streamed)
      loadRows(t.read, t.tile, slot, bn, t.width, m.y, y0, m.ly, t.col);
  };
  Value x = op.getIndex(m.x);
  for (auto [dot, tile] : llvm::zip(m.dots, tileA))
    loadRows(dot.a, tile, cst(0), bm, dot.red.getExtent(0), x, row0, m.lx,
             dot.red.getIndex(0));
  // The key tiles to visit: [first, steps), less those a mask empties.
  int64_t steps = static_cast<int64_t>(llvm::divideCeil(m.ly, bn));
  Value first = cst(0), ub = cst(steps);
  if (m.keysUpTo) {
    // Tiles wholly past the block's last row + c.
    Value last = add(row0, cst(bm - 1 + *m.keysUpTo));
    Value tiles =
        add(arith::FloorDivSIOp::create(b, loc, last, cst(bn)), cst(1));
    ub = arith::MinSIOp::create(b, loc, ub,
                                arith::MaxSIOp::create(b, loc, tiles, cst(0)));
  }
  if (m.keysFrom) {
    // Tiles wholly before the block's first row - c.
    Value from = arith::FloorDivSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, row0, cst(*m.keysFrom)), cst(bn));
    first = arith::MinSIOp::create(
        b, loc, ub, arith::MaxSIOp::create(b, loc, from, cst(0)));
  }
  loadStep(first, rem(first, 2));
  Value group =
      nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
  if (wgmma)
    fenceProxyAsync();
  gpu::BarrierOp::create(b, loc);

  // Carried: add: the output accumulators (dc / 8 tiles of 4);
  // softmax_norm: the running max and sum of this thread's two rows.
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init;
  if (m.c) {
    for (const ScorePart &part : parts)
      init.append(part.m.dc / 8 * 4, f32(0));
  } else {
    init = {negInf, negInf, f32(0), f32(0)};
  }
  Value warpRow = mul(warp, 16);
  bool scoreReads = llvm::any_of(parts, [](const ScorePart &part) {
    return llvm::any_of(part.m.scoreOps, [](Operation *o) {
      bool reads = false;
      o->walk([&](ReadOp) { reads = true; });
      return reads;
    });
  });

  // `masked`: the step may reach past the keys; `diagonal`: the step's
  // key tile may cross the mask's boundary (else the mask's comparison is
  // true on it and not computed).
  Value trueValue = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  auto emitStep = [&](Value kb, ValueRange carried, bool masked, bool diagonal,
                      SmallVector<Value> &yield) -> LogicalResult {
    Value slot = rem(kb, 2);
    // The next step's tiles into the other slot (every warp finished
    // reading it before the barrier that ended the last step).
    Value next = add(kb, cst(1));
    loadStep(next, rem(next, 2));
    Value g = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                      ValueRange{});

    // The dot products: bn / 8 tiles of m16n8 each (with wgmma: this
    // warpgroup's 64 rows of the A tile, the keys' tile as the [n, k]
    // operand; a k16 step is 32 bytes along a 128-byte row, 64-column
    // blocks apart).
    SmallVector<SmallVector<Value>> s;
    // With wgmma, the dot products are issued back to back and waited for
    // once (they are independent: S and dP of attention's dK/dV).
    SmallVector<Value> issued;
    Value wgIdx = div(tid, 128);
    for (auto [dot, tile, offset] : llvm::zip(m.dots, tileA, aOffsets)) {
      const StreamedTile &kt = getStreamed(dot.b, dot.red.getIndex(0));
      SmallVector<Value> acc(bn / 8 * 4, f32(0));
      if (wgmma) {
        Value aBase = add(smemAddr, add(cst(offset), mul(wgIdx, 64 * 128)));
        Value bBase =
            add(smemAddr, add(cst(kt.offset), mul(slot, bn * kt.width * 2)));
        issued.push_back(issueWgmma(
            acc, bn, dot.red.getExtent(0) / 16,
            /*accumulate=*/false, /*bTransposed=*/false, bn, [&](int64_t kq) {
              int64_t blk = kq / 4, in = (kq % 4) * 32;
              return std::make_pair(add(aBase, cst(blk * bm * 128 + in)),
                                    add(bBase, cst(blk * bn * 128 + in)));
            }));
        continue;
      }
      for (int64_t kq = 0; kq < dot.red.getExtent(0) / 16; ++kq) {
        Value arow = add(warpRow, rem(lane, 16));
        Value achunk = add(div(lane, 16), cst(2 * kq));
        SmallVector<Value> a = loadMatrix(
            tile, {cst(0), arow, mul(swizzle(arow, achunk), 8)}, false);
        for (int64_t n2 = 0; n2 < bn / 16; ++n2) {
          Value row =
              add(cst(n2 * 16), add(rem(lane, 8), mul(div(lane, 16), 8)));
          Value chunk = add(rem(div(lane, 8), 2), cst(2 * kq));
          SmallVector<Value> br = loadMatrix(
              kt.tile, {slot, row, mul(swizzle(row, chunk), 8)}, false);
          mmaSync(a, {br[0], br[1]},
                  MutableArrayRef<Value>(acc).slice(n2 * 8, 4));
          mmaSync(a, {br[2], br[3]},
                  MutableArrayRef<Value>(acc).slice(n2 * 8 + 4, 4));
        }
      }
      s.push_back(std::move(acc));
    }
    if (!issued.empty()) {
      waitWgmma();
      for (Value st : issued)
        s.push_back(takeWgmma(st, bn));
    }

    // g on every element: rows lane / 4 (+ 8), keys 2 (lane % 4) (+ 1) of
    // each n8 tile; keys past the end contribute nothing.
    Value xRow = add(row0, add(warpRow, div(lane, 4)));
    Value yCol = add(mul(kb, bn), mul(rem(lane, 4), 2));
    Type f32Type = b.getF32Type();
    auto evaluate = [&](const ScorePart &part,
                        SmallVector<Value> &gv) -> LogicalResult {
      ComprehensionOp pop = part.op;
      const ScoreMatch &pm = part.m;
      gv.assign(bn / 8 * 4, Value());
      for (int64_t t = 0; t < bn / 8; ++t) {
        for (int64_t e = 0; e < 4; ++e) {
          Value iv = e >= 2 ? add(xRow, cst(8)) : xRow;
          Value jv = add(yCol, cst(t * 8 + e % 2));
          IRMapping mapping;
          for (unsigned p = 0; p < pop.getNumParallel(); ++p)
            if (batch[p])
              mapping.map(pop.getIndex(p), batch[p]);
          // Rows and keys past the end (discarded) read in bounds.
          mapping.map(pop.getIndex(m.x), scoreReads ? minU(iv, m.lx - 1) : iv);
          mapping.map(pm.y, scoreReads ? minU(jv, m.ly - 1) : jv);
          for (auto [dot, which] : llvm::zip(pm.dots, part.dotOf)) {
            Value raw = s[which][t * 4 + e];
            if (Value f = factor[which])
              raw = arith::MulFOp::create(b, loc, raw, f);
            ComprehensionOp red = dot.red;
            mapping.map(red.getResult(0), raw);
          }
          for (Operation *inner : pm.scoreOps) {
            if (!diagonal && inner == pm.maskCondition) {
              mapping.map(inner->getResult(0), trueValue);
              continue;
            }
            if (failed(emitter.emit(b, inner, mapping)))
              return failure();
          }
          Value v = mapping.lookupOrNull(pm.g);
          if (!v)
            return pop.emitOpError() << "score kernel: the per-key value is "
                                        "not computed in the body";
          if (v.getType() != f32Type)
            v = arith::ExtFOp::create(b, loc, f32Type, v);
          if (masked)
            v = arith::SelectOp::create(b, loc, lt(jv, m.ly), v,
                                        m.c ? f32(0) : negInf);
          gv[t * 4 + e] = v;
        }
      }
      return success();
    };

    if (m.c) {
      // Per part: O += G W, W [keys, dc] read transposed. With wgmma each
      // part's product is issued as soon as its G is known and all are
      // waited for together: the next part's g runs under the products.
      int64_t at = 0;
      SmallVector<std::pair<Value, int64_t>> inFlight;
      for (const ScorePart &part : parts) {
        ComprehensionOp pop = part.op;
        const ScoreMatch &pm = part.m;
        SmallVector<Value> gv;
        if (failed(evaluate(part, gv)))
          return failure();
        const StreamedTile &wt = getStreamed(pm.w, pop.getIndex(*m.c));
        int64_t nO = pm.dc / 8 * 4;
        SmallVector<Value> o(carried.slice(at, nO));
        at += nO;
        if (wgmma) {
          inFlight.push_back({issueKeyProduct(o, packKeyOperand(gv, bn), bn,
                                              pm.dc, smemAddr, wt.offset, slot),
                              pm.dc});
          continue;
        }
        accumulateKeyProduct(o, gv, bn, pm.dc, wgmma, smemAddr, wt.tile,
                             wt.offset, slot, lane);
        yield.append(o);
      }
      if (!inFlight.empty())
        waitWgmma();
      for (auto [st, dc] : inFlight)
        yield.append(takeWgmma(st, dc));
    } else {
      // The running max (agreed by the 4 lanes of a row) and sum.
      SmallVector<Value> gv;
      if (failed(evaluate(parts[0], gv)))
        return failure();
      SmallVector<Value> mx{carried[0], carried[1]},
          sum{carried[2], carried[3]};
      for (int64_t r = 0; r < 2; ++r) {
        Value cur = mx[r];
        for (int64_t t = 0; t < bn / 8; ++t)
          for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
            cur = arith::MaximumFOp::create(b, loc, cur, gv[t * 4 + e]);
        cur = rowReduce(cur, /*max=*/true);
        // A row with no finite score yet subtracts 0 (exp(-inf) = 0).
        Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            cur, negInf);
        Value safe = arith::SelectOp::create(b, loc, isInf, f32(0), cur);
        auto expOf = [&](Value v) -> Value {
          Value x = arith::SubFOp::create(b, loc, v, safe);
          if (approximate)
            return emitNvvmExp(b, loc, x);
          return math::ExpOp::create(b, loc, x);
        };
        Value total = arith::MulFOp::create(b, loc, sum[r], expOf(mx[r]));
        for (int64_t t = 0; t < bn / 8; ++t)
          for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
            total = arith::AddFOp::create(b, loc, total, expOf(gv[t * 4 + e]));
        mx[r] = cur;
        sum[r] = total;
      }
      yield = {mx[0], mx[1], sum[0], sum[1]};
    }
    nvgpu::DeviceAsyncWaitOp::create(b, loc, g, b.getI32IntegerAttr(0));
    if (wgmma)
      fenceProxyAsync();
    gpu::BarrierOp::create(b, loc);
    return success();
  };
  auto emitLoop = [&](Value lb, Value ubound, ValueRange initial, bool masked,
                      bool diagonal) -> FailureOr<scf::ForOp> {
    auto loop = scf::ForOp::create(b, loc, lb, ubound, cst(1), initial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> yield;
    if (failed(emitStep(loop.getInductionVar(), loop.getRegionIterArgs(),
                        masked, diagonal, yield)))
      return failure();
    scf::YieldOp::create(b, loc, yield);
    return loop;
  };
  // Whole key tiles without the end-of-keys check, and key tiles wholly
  // inside the mask's kept region without the mask: loops over [first,
  // ub) split where those change.
  Value full = arith::MaxSIOp::create(
      b, loc, first, arith::MinSIOp::create(b, loc, cst(m.ly / bn), ub));
  auto clamp = [&](Value v, Value lo, Value hi) -> Value {
    return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, v, lo),
                                  hi);
  };
  struct Segment {
    Value lb, ub;
    bool masked, diagonal;
  };
  SmallVector<Segment> segments;
  if (m.keysUpTo) {
    // Tiles wholly at or before the block's first row + c: y0 + bn - 1 <=
    // row0 + c.
    Value inner = clamp(arith::FloorDivSIOp::create(
                            b, loc, add(row0, cst(*m.keysUpTo + 1)), cst(bn)),
                        first, full);
    segments = {{first, inner, false, false}, {inner, ub, true, true}};
  } else if (m.keysFrom) {
    // Tiles wholly at or after the block's last row - c: y0 >= row0 + bm -
    // 1 - c.
    Value inner = clamp(
        arith::FloorDivSIOp::create(
            b, loc, add(row0, cst(bm - 1 - *m.keysFrom + bn - 1)), cst(bn)),
        first, full);
    segments = {{first, inner, false, true},
                {inner, full, false, false},
                {full, ub, true, true}};
  } else {
    segments = {{first, full, false, true}, {full, ub, true, true}};
  }
  SmallVector<Value> carried(init);
  for (const Segment &seg : segments) {
    FailureOr<scf::ForOp> loop =
        emitLoop(seg.lb, seg.ub, carried, seg.masked, seg.diagonal);
    if (failed(loop))
      return failure();
    carried.assign(loop->getResults().begin(), loop->getResults().end());
  }

  // The results, rows past the end skipped.
  ValueRange res = carried;
  Value xRow = add(row0, add(warpRow, div(lane, 4)));
  for (int64_t r = 0; r < 2; ++r) {
    Value iv = r ? add(xRow, cst(8)) : xRow;
    SmallVector<Value> total;
    if (!m.c)
      total = {res[r], rowReduce(res[2 + r], /*max=*/false)};
    Value inRange = lt(iv, m.lx);
    if (!m.c)
      inRange = arith::AndIOp::create(
          b, loc, inRange,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem(lane, 4),
                                cst(0)));
    auto ifOp = scf::IfOp::create(b, loc, inRange, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    SmallVector<Value> idx;
    for (unsigned p = 0; p < op.getNumParallel(); ++p)
      idx.push_back(p == m.x ? iv : batch[p]);
    if (!m.c) {
      for (auto [v, out] : llvm::zip(total, outputs)) {
        Type e = cast<MemRefType>(out.getType()).getElementType();
        if (!e.isF32())
          v = arith::TruncFOp::create(b, loc, e, v);
        memref::StoreOp::create(b, loc, v, out, idx);
      }
      continue;
    }
    int64_t at = 0;
    for (const ScorePart &part : parts) {
      Value buffer = part.outputs[0];
      Type out = cast<MemRefType>(buffer.getType()).getElementType();
      for (int64_t t = 0; t < part.m.dc / 8; ++t) {
        idx[*m.c] = add(mul(rem(lane, 4), 2), cst(t * 8));
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, b.getF32Type()),
            ValueRange{res[at + t * 4 + 2 * r], res[at + t * 4 + 2 * r + 1]});
        if (!out.isF32())
          pair =
              arith::TruncFOp::create(b, loc, VectorType::get({2}, out), pair);
        // Pairs of columns start at even c, the output's last dimension (a
        // multiple of 64 long); buffers are 16-byte aligned (the runtimes
        // check).
        vector::StoreOp::create(
            b, loc, pair, buffer, idx,
            /*nontemporal=*/false,
            llvm::Align(2 * out.getIntOrFloatBitWidth() / 8));
      }
      at += part.m.dc / 8 * 4;
    }
  }
  return success();
}

} // namespace

namespace {

/// A sum over keys of dot-product scores as a score kernel.
struct ScoreKernelPattern : KernelPattern {
  ScoreKernelPattern() : KernelPattern("score") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::Score)
      return notifyMatchFailure(r.op, "not a score kernel");
    const ScoreMatch &m = *r.choice.score;
    // Without tensor cores: the SIMT kernel, one reduction (a sibling gets
    // its own).
    if (r.choice.scoreConfig.simt)
      return succeeded(emitSimtScoreKernel(r.b, r.op, m,
                                           *r.choice.scoreConfig.simt,
                                           r.tensors, r.outputs, r.k))
                 ? KernelMatch::Built
                 : KernelMatch::Error;
    SmallVector<ScorePart, 2> parts;
    SmallVector<unsigned> own = llvm::to_vector(
        llvm::seq<unsigned>(0, static_cast<unsigned>(m.dots.size())));
    parts.push_back({r.op, m, r.outputs, own});
    if (r.sibling) {
      std::string ignored;
      std::optional<ScoreMatch> m2 = matchScoreReduction(r.sibling, ignored);
      std::optional<SmallVector<unsigned>> dotOf;
      if (m2)
        dotOf = matchDots(r.op, m, r.sibling, *m2);
      if (dotOf)
        parts.push_back({r.sibling, *m2, r.siblingOutputs, *dotOf});
    }
    if (failed(ScoreEmitter(r.b, parts, r.tensors, r.k, r.choice.scoreConfig)
                   .emit()))
      return KernelMatch::Error;
    r.k.wroteSibling = parts.size() == 2;
    return KernelMatch::Built;
  }
};

} // namespace

void mlir::tang::populateScoreKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<ScoreKernelPattern>());
}
