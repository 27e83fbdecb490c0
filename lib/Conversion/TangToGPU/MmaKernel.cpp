//===- MmaKernel.cpp - tensor-core contractions -----------------*- C++ -*-===//
//
// The shape-keyed emitter for contractions of f16/bf16 operands with f32
// accumulation on tensor cores (mma.sync.m16n8k16, sm_80 and up). Keyed on
// the graph (an add-reduction of a product of two reads, see
// matchMmaContraction), never on an operator's name.
//
// The kernel, for a block tile BM x BN of the result and steps of BK along
// the reduced index:
//
//  * operand tiles go from global to shared memory by cp.async, 16 bytes a
//    thread, in a ring of `stages` buffers (a multi-stage pipeline: the
//    loads of step t + stages - 1 are in flight while step t computes).
//    Rows are XOR-swizzled by 16-byte chunk so that ldmatrix reads of eight
//    rows hit eight different bank groups. Chunks past the edges of the
//    operands are zero-filled (cp.async's source size), so ragged M, N and
//    K need no other code;
//  * a grid of warps covers the tile, each warp a TM x TN sub-tile held as
//    f32 accumulators in registers, fed by ldmatrix (transposing for a
//    [k, n] operand) and mma.sync;
//  * the accumulators go through shared memory (the ring's space reused)
//    to the epilogue: every thread takes 16 bytes of the result at a time,
//    evaluates the rest of the comprehension's body per element (bias,
//    activation, residual, scaling: whatever fusion put there) and stores
//    one vector, masked at the edges.
//
//===----------------------------------------------------------------------===//

#include "MmaKernel.h"

#include "BodyEmitter.h"
#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

namespace {

int64_t roundUpPow2(int64_t v, int64_t lo, int64_t hi) {
  return std::clamp<int64_t>(llvm::PowerOf2Ceil(std::max<int64_t>(v, 1)), lo,
                             hi);
}

/// The wgmma configuration: 128 x 128 tiles (64 rows for a short M), a
/// 4-deep ring; the schedule's tile widths where it gives them.
/// The default configuration, sized for the target of `op`'s module.
MmaConfig getDefaultConfig(ComprehensionOp op) {
  TargetAttr target = getTarget(op);
  MmaConfig cfg;
  cfg.maxShared = target.getSharedPerBlock();
  cfg.smCount = target.getSmCount();
  return cfg;
}

MmaConfig getWgmmaConfig(ComprehensionOp op, const MmaContraction &c) {
  MmaConfig cfg = getDefaultConfig(op);
  cfg.wgmma = true;
  cfg.bk = 64;
  cfg.bm = c.extentM <= 64 ? 64 : 128;
  cfg.bn = 128;
  if (ScheduleAttr s = op.getScheduleAttr()) {
    MmaConfig want = cfg;
    want.bm = roundUpPow2(s.getTile()[c.m], 64, 128);
    if (c.red == op)
      want.bk = s.getTile().back() <= 32 ? 32 : 64;
    want.bn = roundUpPow2(s.getTile()[c.n], 64, 256);
    want.stages = std::max<int64_t>(3, s.getStages());
    want.warpsM = want.bm / 16;
    want.warpsN = 1;
    if (want.isValid())
      return want;
  }
  cfg.warpsM = cfg.bm / 16;
  cfg.warpsN = 1;
  return cfg;
}

} // namespace

MmaConfig mlir::tang::getMmaConfig(ComprehensionOp op, const MmaContraction &c,
                                   bool wgmma) {
  if (c.elementType.isF32()) {
    // tf32: k steps of 32 f32 values (128-byte rows); mma.sync with
    // 128 x 128 tiles, or wgmma with the schedule's widths.
    MmaConfig cfg = wgmma ? getWgmmaConfig(op, c) : getDefaultConfig(op);
    cfg.eb = 4;
    cfg.bk = 32;
    // The schedule sizes f32 products for plain kernels (128 columns);
    // on wgmma, 256 columns where the product still fills every
    // multiprocessor (the 16-bit products' tile: the same bytes a step).
    if (wgmma && c.extentN >= 256 &&
        llvm::divideCeil(c.extentM, cfg.bm) *
                llvm::divideCeil(c.extentN, 256) >=
            static_cast<uint64_t>(cfg.smCount))
      cfg.bn = 256;
    while (!cfg.isValid() && cfg.stages > 3)
      --cfg.stages;
    return cfg;
  }
  if (wgmma)
    return getWgmmaConfig(op, c);
  // The default, with fewer stages where the target's shared memory needs
  // it (emit() refuses it when even two do not fit).
  MmaConfig cfg = getDefaultConfig(op);
  while (!cfg.isValid() && cfg.stages > 2)
    --cfg.stages;
  ScheduleAttr s = op.getScheduleAttr();
  if (!s)
    return cfg;
  MmaConfig want = cfg;
  want.bm = roundUpPow2(s.getTile()[c.m], 32, 256);
  want.bn = roundUpPow2(s.getTile()[c.n], 32, 256);
  if (c.red == op)
    want.bk = std::clamp<int64_t>(s.getTile().back(), 32, 64);
  want.stages = std::max<int64_t>(2, s.getStages());
  want.warpsM = std::max<int64_t>(1, s.getThreads()[c.m]);
  want.warpsN = std::max<int64_t>(1, s.getThreads()[c.n] / 32);
  return want.isValid() ? want : cfg;
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

Value MmaEmitter::swizzle(Value row, Value chunk, int64_t chunks) {
  // Eight consecutive rows must land in eight different 16-byte bank
  // groups of a 128-byte line.
  Value key;
  if (chunks >= 8)
    key = rem(row, 8);
  else if (chunks == 4)
    key = rem(div(row, 2), 4);
  else
    key = rem(div(row, 4), 2);
  return arith::XOrIOp::create(b, loc, chunk, key);
}

void MmaEmitter::emitTileLoad(ReadOp read, Value tile, Value slot, int64_t rows,
                              int64_t chunks, Value rowIndex, Value rowBase,
                              int64_t rowExtent, Value colIndex, Value colBase,
                              int64_t colExtent, bool blocked) {
  Value memref = tensors.lookup(read.getTensor());
  int64_t perThread = rows * chunks / cfg.threads();
  for (int64_t i = 0; i < perThread; ++i) {
    Value id = add(tid, cst(i * cfg.threads()));
    Value r = div(id, chunks), ch = rem(id, chunks);
    int64_t vec = cfg.vec();
    Value row = add(rowBase, r), col = add(colBase, mul(ch, vec));
    Value valid =
        arith::AndIOp::create(b, loc, lt(row, rowExtent), lt(col, colExtent));
    // Out-of-range chunks read nothing (source size 0, zero-filled) from a
    // clamped, in-bounds address.
    SmallVector<Value> coords =
        getCoordinates(read, rowIndex, minU(row, rowExtent - 1), colIndex,
                       minU(col, colExtent - vec));
    Value srcElements =
        arith::SelectOp::create(b, loc, valid, cst(vec), cst(0));
    SmallVector<Value> dst;
    // Blocks as wide as a swizzled row: bk 16-bit values.
    int64_t perBlock = cfg.bk / 8;
    if (blocked)
      dst = {slot, div(ch, perBlock), r,
             mul(swizzle(r, rem(ch, perBlock), perBlock), 8)};
    else
      dst = {slot, r, mul(swizzle(r, ch, chunks), vec)};
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile, dst,
        memref, coords, b.getIndexAttr(vec), srcElements, b.getUnitAttr());
  }
}

SmallVector<Value> MmaEmitter::getCoordinates(ReadOp read, Value rowIndex,
                                              Value row, Value colIndex,
                                              Value col) {
  IRMapping idx;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (batch[p])
      idx.map(op.getIndex(p), batch[p]);
  idx.map(op.getIndex(c.m), m0);
  idx.map(op.getIndex(c.n), n0);
  idx.map(rowIndex, row);
  idx.map(colIndex, col);
  SmallVector<Value> operands = llvm::map_to_vector(
      read.getIndices(), [&](Value v) { return idx.lookup(v); });
  return SmallVector<Value>(
      *affine::expandAffineMap(b, loc, read.getMap(), operands));
}

bool MmaEmitter::isBox(ReadOp read, bool isA) {
  Value kIndex = c.red.getIndex(c.red.getNumIndices() - 1);
  Value own = op.getIndex(isA ? c.m : c.n);
  bool kContiguous = isA ? c.aKContiguous : c.bKContiguous;
  Value col = kContiguous ? kIndex : own, row = kContiguous ? own : kIndex;
  std::optional<unsigned> rowCoord =
      getBoxRowCoordinate(read, row, col, [&](Value v) {
        for (unsigned p = 0; p < op.getNumParallel(); ++p)
          if (p != c.m && p != c.n && op.getIndex(p) == v)
            return true;
        return false;
      });
  if (!rowCoord)
    return false;
  // Past the reduced index's extent the box must read zeros: its
  // coordinate is k exactly, over the tensor's whole dimension.
  AffineMap map = read.getMap();
  unsigned kCoord = col == kIndex ? map.getNumResults() - 1 : *rowCoord;
  unsigned kPos =
      llvm::find(read.getIndices(), kIndex) - read.getIndices().begin();
  auto t = cast<RankedTensorType>(read.getTensor().getType());
  return map.getResult(kCoord) == getAffineDimExpr(kPos, b.getContext()) &&
         t.getDimSize(kCoord) == c.extentK;
}

void MmaEmitter::emitLoads(Value kt, Value slot) {
  Value k = c.red.getIndex(c.red.getNumIndices() - 1);
  Value k0 = mul(kt, cfg.bk);
  int64_t vec = cfg.vec();
  if (c.aKContiguous)
    emitTileLoad(c.a, tileA, slot, cfg.bm, cfg.bk / vec, op.getIndex(c.m), m0,
                 c.extentM, k, k0, c.extentK);
  else
    emitTileLoad(c.a, tileA, slot, cfg.bk, cfg.bm / vec, k, k0, c.extentK,
                 op.getIndex(c.m), m0, c.extentM, /*blocked=*/true);
  if (c.bKContiguous)
    emitTileLoad(c.b, tileB, slot, cfg.bn, cfg.bk / vec, op.getIndex(c.n), n0,
                 c.extentN, k, k0, c.extentK);
  else
    emitTileLoad(c.b, tileB, slot, cfg.bk, cfg.bn / vec, k, k0, c.extentK,
                 op.getIndex(c.n), n0, c.extentN, /*blocked=*/cfg.wgmma);
}

SmallVector<Value> MmaEmitter::emitCompute(Value slot, ValueRange accIn) {
  SmallVector<Value> acc(accIn);
  int64_t fm = cfg.tm() / 16, fn = cfg.tn() / 8;
  Value laneMod16 = rem(lane, 16), laneDiv16 = div(lane, 16);
  Value laneMod8 = rem(lane, 8), laneBit3 = rem(div(lane, 8), 2);
  // Each mma.sync step takes 32 bytes of k (k16 of 16-bit values, k8 of
  // tf32): two 16-byte chunks. ldmatrix reads 16-bit views of the tiles
  // (the same bytes: an 8 x 8 matrix of 16-bit values is an 8 x 4 one of
  // 32-bit values, thread t getting row t / 4, word t % 4: the tf32
  // fragment's layout too).
  int64_t chunksK = cfg.bk / cfg.vec();
  for (int64_t kk = 0; kk < chunksK / 2; ++kk) {
    // A: x4 = rows 0-7/8-15 x k chunks 0/1 of a 16-row fragment; lane l
    // addresses row l % 16, k chunk l / 16.
    SmallVector<SmallVector<Value>> aFrag;
    for (int64_t i = 0; i < fm; ++i) {
      Value row = add(mul(warpM, cfg.tm()), add(laneMod16, cst(i * 16)));
      Value chunk = add(laneDiv16, cst(kk * 2));
      Value col = mul(swizzle(row, chunk, chunksK), 8);
      aFrag.push_back(loadMatrix(tileA16, {slot, row, col}, false));
    }
    // B: x4 covers k 0-15 of two n8 tiles.
    SmallVector<SmallVector<Value>> bFrag;
    for (int64_t j = 0; j < fn / 2; ++j) {
      Value nBase = add(mul(warpN, cfg.tn()), cst(j * 16));
      SmallVector<Value> regs;
      if (c.bKContiguous) {
        // Rows n, 16-byte chunks along k: lane l addresses n row
        // l % 8 + 8 (l / 16), k chunk (l / 8) % 2; registers (0, 1) are the
        // first n8 tile, (2, 3) the second.
        Value row = add(nBase, add(laneMod8, mul(laneDiv16, 8)));
        Value chunk = add(laneBit3, cst(kk * 2));
        Value col = mul(swizzle(row, chunk, chunksK), 8);
        regs = loadMatrix(tileB16, {slot, row, col}, false);
      } else if (cfg.eb == 4) {
        // tf32 [k, n]: no 32-bit transposing ldmatrix; lane l takes
        // b0 = (k l % 4, n l / 4), b1 = (k l % 4 + 4, n l / 4) of each n8
        // tile, from rows k, 4-element chunks along n.
        Value t = rem(lane, 4), g = div(lane, 4);
        for (int64_t h = 0; h < 2; ++h) {
          Value n = add(nBase, add(g, cst(h * 8)));
          for (int64_t r = 0; r < 2; ++r) {
            Value row = add(cst(kk * 8 + r * 4), t);
            Value col =
                add(mul(swizzle(row, div(n, 4), cfg.bn / 4), 4), rem(n, 4));
            Value v = memref::LoadOp::create(b, loc, tileB,
                                             ValueRange{slot, row, col});
            regs.push_back(arith::BitcastOp::create(b, loc, b.getI32Type(), v));
          }
        }
      } else {
        // Rows k, chunks along n, transposed: lane l addresses k row
        // l % 8 + 8 ((l / 8) % 2), n chunk l / 16.
        Value row = add(cst(kk * 16), add(laneMod8, mul(laneBit3, 8)));
        Value chunk = add(div(nBase, 8), laneDiv16);
        Value col = mul(swizzle(row, chunk, cfg.bn / 8), 8);
        regs = loadMatrix(tileB, {slot, row, col}, true);
      }
      bFrag.push_back({regs[0], regs[1]});
      bFrag.push_back({regs[2], regs[3]});
    }
    if (cfg.eb == 4) {
      // f32 bits to tf32, rounded to nearest (the instruction would only
      // drop the low 13 bits).
      auto round = [&](SmallVector<Value> &regs) {
        for (Value &r : regs)
          r = NVVM::ConvertFloatToTF32Op::create(
              b, loc, b.getI32Type(),
              arith::BitcastOp::create(b, loc, b.getF32Type(), r),
              NVVM::FPRoundingMode::RNA, NVVM::SaturationMode::NONE,
              /*relu=*/false);
      };
      for (SmallVector<Value> &regs : aFrag)
        round(regs);
      for (SmallVector<Value> &regs : bFrag)
        round(regs);
    }
    for (int64_t i = 0; i < fm; ++i) {
      for (int64_t j = 0; j < fn; ++j) {
        mmaSync(aFrag[i], bFrag[j],
                MutableArrayRef<Value>(acc).slice((i * fn + j) * 4, 4));
      }
    }
  }
  return acc;
}

void MmaEmitter::storeQuad(Value row, Value col, ArrayRef<Value> quad) {
  auto pair = VectorType::get({2}, b.getF32Type());
  for (int64_t h = 0; h < 2; ++h) {
    Value v = vector::FromElementsOp::create(
        b, loc, pair, ValueRange{quad[2 * h], quad[2 * h + 1]});
    vector::StoreOp::create(b, loc, v, tileC,
                            ValueRange{add(row, cst(h * 8)), col},
                            /*nontemporal=*/false, llvm::Align(8));
  }
}

LogicalResult MmaEmitter::emitEpilogue(ValueRange accRange, int64_t colBase,
                                       int64_t width) {
  // Accumulators to shared memory. Thread t of a warp holds, per m16n8
  // tile (mma.sync) or per 8 columns of its warp's 16 rows (wgmma), rows
  // t / 4 and t / 4 + 8, columns 2 (t % 4) and 2 (t % 4) + 1.
  SmallVector<Value> acc(accRange);
  if (!width)
    width = cfg.bn;
  Value laneRow = div(lane, 4), laneCol = mul(rem(lane, 4), 2);
  if (cfg.wgmma) {
    Value row = add(mul(div(tid, 32), 16), laneRow);
    for (int64_t j = colBase / 8; j < (colBase + width) / 8; ++j)
      storeQuad(row, add(laneCol, cst(j * 8 - colBase)),
                ArrayRef<Value>(acc).slice(4 * j, 4));
  } else {
    assert(colBase == 0 && width == cfg.bn && "mma.sync stages whole tiles");
    int64_t fn = cfg.tn() / 8;
    for (int64_t i = 0; i < cfg.tm() / 16; ++i) {
      for (int64_t j = 0; j < fn; ++j) {
        Value row = add(mul(warpM, cfg.tm()), add(laneRow, cst(i * 16)));
        Value col = add(mul(warpN, cfg.tn()), add(laneCol, cst(j * 8)));
        storeQuad(row, col, ArrayRef<Value>(acc).slice((i * fn + j) * 4, 4));
      }
    }
  }
  syncConsumers();

  // Then 16 bytes of the result per thread and step, through the body.
  Type storage =
      cast<RankedTensorType>(op.getResultTypes()[0]).getElementType();
  int64_t bytes = std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
  int64_t v = 16 / bytes;
  if (c.extentN % v != 0 || width % v != 0)
    v = 1;
  int64_t perRow = width / v;
  int64_t steps = cfg.bm * perRow / cfg.threads();
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  bool approximate = storage.isF16() || storage.isBF16();
  emitter.setApproximate(approximate);
  LogicalResult result = success();
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value id = add(mul(loop.getInductionVar(), cfg.threads()), tid);
    Value r = div(id, perRow), cv = mul(rem(id, perRow), v);
    Value m = add(m0, r), n = add(n0, add(cst(colBase), cv));
    Value inside =
        arith::AndIOp::create(b, loc, lt(m, c.extentM), lt(n, c.extentN));
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    auto vecType = VectorType::get({v}, b.getF32Type());
    Value accs = vector::LoadOp::create(
        b, loc, vecType, tileC, ValueRange{r, cv},
        /*nontemporal=*/false, llvm::Align(std::min<int64_t>(16, 4 * v)));
    SmallVector<Value> results;
    for (int64_t e = 0; e < v && succeeded(result); ++e) {
      Value a = vector::ExtractOp::create(b, loc, accs, ArrayRef<int64_t>{e});
      IRMapping mapping;
      for (unsigned p = 0; p < op.getNumParallel(); ++p)
        if (batch[p])
          mapping.map(op.getIndex(p), batch[p]);
      mapping.map(op.getIndex(c.m), m);
      mapping.map(op.getIndex(c.n), e ? add(n, cst(e)) : n);
      if (c.red == op) {
        results.push_back(a);
        continue;
      }
      mapping.map(c.red.getResult(0), a);
      for (Operation &inner : op.getBodyBlock().without_terminator()) {
        if (&inner == c.red.getOperation())
          continue;
        if (failed(emitter.emit(b, &inner, mapping))) {
          result = failure();
          break;
        }
      }
      Value y = op.getYield().getValues()[0];
      if (!mapping.contains(y)) {
        Operation *def = y.getDefiningOp();
        if (!def || failed(emitter.emit(b, def, mapping))) {
          result = failure();
          break;
        }
      }
      results.push_back(mapping.lookup(y));
    }
    if (failed(result))
      return failure();
    SmallVector<Value> outIndices;
    for (unsigned p = 0; p < op.getNumParallel(); ++p)
      outIndices.push_back(p == c.m ? m : p == c.n ? n : batch[p]);
    Type compute = results.front().getType();
    Value out;
    if (v == 1) {
      out = results.front();
      if (out.getType() != storage)
        out = arith::TruncFOp::create(b, loc, storage, out);
      memref::StoreOp::create(b, loc, out, outputs[0], outIndices);
    } else {
      out = vector::FromElementsOp::create(
          b, loc, VectorType::get({v}, compute), results);
      if (compute != storage)
        out =
            arith::TruncFOp::create(b, loc, VectorType::get({v}, storage), out);
      // Aligned: n is a multiple of v, rows are (c.extentN, a multiple of
      // v) elements long, buffers 16-byte aligned (the runtimes check).
      vector::StoreOp::create(b, loc, out, outputs[0], outIndices,
                              /*nontemporal=*/false, llvm::Align(v * bytes));
    }
  }
  return success();
}

void MmaEmitter::setTile(Value pid, Value batchIndex) {
  // Tiles in groups of kGroupRows row tiles, column-major within a group:
  // blocks running together share operand panels in L2.
  constexpr int64_t kGroupRows = 8;
  int64_t tilesN = llvm::divideCeil(c.extentN, cfg.bn);
  int64_t tilesM = llvm::divideCeil(c.extentM, cfg.bm);
  Value group = div(pid, kGroupRows * tilesN);
  Value firstM = mul(group, kGroupRows);
  Value inGroup = rem(pid, kGroupRows * tilesN);
  // The last group may be short.
  Value groupRows = arith::MinUIOp::create(
      b, loc, cst(kGroupRows),
      arith::SubIOp::create(b, loc, cst(tilesM), firstM));
  Value tileM = add(firstM, arith::RemUIOp::create(b, loc, inGroup, groupRows));
  Value tileN = arith::DivUIOp::create(b, loc, inGroup, groupRows);
  n0 = mul(tileN, cfg.bn);
  m0 = mul(tileM, cfg.bm);
  batch.assign(op.getNumParallel(), Value());
  Value rest = batchIndex;
  for (int p = static_cast<int>(op.getNumParallel()) - 1; p >= 0; --p) {
    if (static_cast<unsigned>(p) == c.m || static_cast<unsigned>(p) == c.n)
      continue;
    batch[p] = rem(rest, op.getExtent(p));
    rest = div(rest, op.getExtent(p));
  }
}

void MmaEmitter::syncConsumers() {
  if (!cfg.warpSpecialized) {
    gpu::BarrierOp::create(b, loc);
    return;
  }
  Type i32 = b.getI32Type();
  NVVM::BarrierOp::create(
      b, loc, Type(), arith::ConstantIntOp::create(b, loc, i32, 1),
      arith::ConstantIntOp::create(b, loc, i32, cfg.threads()),
      NVVM::BarrierReductionAttr(), Value());
}

LogicalResult MmaEmitter::emit() {
  MLIRContext *ctx = b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  int64_t eb = cfg.eb;
  int64_t aBytes = cfg.stages * cfg.bm * cfg.bk * eb;
  int64_t bBytes = cfg.stages * cfg.bk * cfg.bn * eb;
  int64_t cBytes = cfg.bm * (cfg.bn + 8) * 4;
  k.sharedBytes = std::max(aBytes + bBytes, cBytes);
  if (k.sharedBytes > cfg.maxShared)
    return op.emitOpError()
           << "tensor-core kernel: " << k.sharedBytes
           << " bytes of shared memory for its tiles, more than the "
           << cfg.maxShared << " a block may have on "
           << getTarget(op).getChip();

  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != c.m && p != c.n)
      batchCount *= op.getExtent(p);
  k.grid = {static_cast<int64_t>(llvm::divideCeil(c.extentN, cfg.bn)),
            static_cast<int64_t>(llvm::divideCeil(c.extentM, cfg.bm)),
            batchCount};
  k.block = {cfg.threads(), 1, 1};
  if (batchCount > 65535 || k.grid[1] > 65535)
    return op.emitOpError() << "has " << batchCount
                            << " batch points or row tiles: more than the "
                               "grid holds";

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, 32);
  Value warp = div(tid, 32);
  warpM = div(warp, cfg.warpsN);
  warpN = rem(warp, cfg.warpsN);
  if (cfg.warpSpecialized)
    return emitWarpSpecialized();
  setTile(add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), k.grid[0]),
              gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)),
          gpu::BlockIdOp::create(b, loc, gpu::Dimension::z));

  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), wg));
  // wgmma's 128-byte swizzle repeats every 1024 bytes, from 1024-byte
  // aligned addresses: the tiles start at the first such address.
  Value base = cst(0);
  if (cfg.wgmma) {
    k.sharedBytes += 1024;
    Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
    base = rem(arith::SubIOp::create(b, loc, cst(1024), rem(addr, 1024)), 1024);
    smemBase = add(addr, base);
  }
  auto view = [&](ArrayRef<int64_t> shape, Type e, int64_t offset) {
    return memref::ViewOp::create(b, loc,
                                  MemRefType::get(shape, e, AffineMap(), wg),
                                  smem, add(base, cst(offset)), ValueRange{})
        .getResult();
  };
  tileA = c.aKContiguous ? view({cfg.stages, cfg.bm, cfg.bk}, c.elementType, 0)
                         : view({cfg.stages, cfg.bm / cfg.bk, cfg.bk, cfg.bk},
                                c.elementType, 0);
  if (c.bKContiguous)
    tileB = view({cfg.stages, cfg.bn, cfg.bk}, c.elementType, aBytes);
  else if (cfg.wgmma)
    tileB = view({cfg.stages, cfg.bn / cfg.bk, cfg.bk, cfg.bk}, c.elementType,
                 aBytes);
  else
    tileB = view({cfg.stages, cfg.bk, cfg.bn}, c.elementType, aBytes);
  tileA16 = tileA;
  tileB16 = tileB;
  if (eb == 4) {
    Type bf16 = b.getBF16Type();
    tileA16 = view({cfg.stages, cfg.bm, 2 * cfg.bk}, bf16, 0);
    if (c.bKContiguous)
      tileB16 = view({cfg.stages, cfg.bn, 2 * cfg.bk}, bf16, aBytes);
  }
  tileC = view({cfg.bm, cfg.bn + 8}, b.getF32Type(), 0);
  if (cfg.tma) {
    // The mbarriers go past the ring and the result tile (which reuses
    // the ring).
    int64_t offset = std::max(aBytes + bBytes, cBytes);
    barriers = add(smemBase, cst(offset));
    k.sharedBytes = 1024 + offset + 8 * cfg.stages;
    emitTmaSetup();
  }

  SmallVector<Value> acc =
      cfg.wgmma ? emitWgmmaMainLoop() : emitMmaSyncMainLoop();
  // The ring is reused for the accumulators: nothing may still be landing
  // (every bulk copy issued has been waited for).
  if (!cfg.tma)
    nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  return emitEpilogue(acc);
}

SmallVector<Value> MmaEmitter::emitMmaSyncMainLoop() {
  MLIRContext *ctx = b.getContext();
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  // Prologue: stages - 1 steps in flight.
  for (int64_t s = 0; s + 1 < cfg.stages; ++s) {
    emitLoads(cst(s), cst(s));
    lastGroup = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                        ValueRange{});
  }
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup,
                                   b.getI32IntegerAttr(cfg.stages - 2));
  gpu::BarrierOp::create(b, loc);

  // Main loop: issue step kt + stages - 1 into the slot step kt - 1 used,
  // compute step kt, then wait for step kt + 1. Steps past K load zeros.
  int64_t steps = static_cast<int64_t>(llvm::divideCeil(c.extentK, cfg.bk));
  int64_t numAcc = (cfg.tm() / 16) * (cfg.tn() / 8) * 4;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> init(numAcc, zero);
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value next = add(kt, cst(cfg.stages - 1));
    emitLoads(next, rem(next, cfg.stages));
    Value g = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                      ValueRange{});
    SmallVector<Value> acc =
        emitCompute(rem(kt, cfg.stages), loop.getRegionIterArgs());
    nvgpu::DeviceAsyncWaitOp::create(b, loc, g,
                                     b.getI32IntegerAttr(cfg.stages - 2));
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  return SmallVector<Value>(loop.getResults());
}

namespace {

/// A contraction (matchMmaContraction) on tensor cores.
struct MmaKernelPattern : KernelPattern {
  MmaKernelPattern(const KernelOptions &options)
      : KernelPattern("mma"), options(options) {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    ComprehensionOp op = r.op;
    // Narrow contractions (matrix-vector) stay on the row kernels: they are
    // memory-bound.
    if (classifyComprehension(op) != ShapeClass::MatmulLike)
      return notifyMatchFailure(op, "not matmul-like");
    bool wgmma = options.tensorCores == TensorCoreKind::Wgmma;
    std::string why;
    std::optional<MmaContraction> c =
        matchMmaContraction(op, why, wgmma, options.tf32);
    if (!c) {
      // Say why a contraction of 16-bit operands (or any, with tf32) stays
      // off the tensor cores.
      if (!readsSixteenBitTensors(op) && !options.tf32)
        return notifyMatchFailure(op, why);
      auto it = options.collapseFailures->find(op);
      if (it != options.collapseFailures->end())
        why = "summed over its reduced indices as one: " + it->second;
      return remarkMatchFailure(op, "not on tensor cores: " + why);
    }
    // wgmma's tf32 takes both operands contiguous in k; other tf32 products
    // run on mma.sync.
    bool mmaSyncOnly =
        c->elementType.isF32() && !(c->aKContiguous && c->bKContiguous);
    if (failed(MmaEmitter(r.b, op, *c, r.tensors, r.outputs, r.k,
                          wgmma && !mmaSyncOnly, options.tma,
                          options.warpSpecialize)
                   .emit()))
      return KernelMatch::Error;
    return KernelMatch::Built;
  }

  KernelOptions options;
};

} // namespace

void mlir::tang::populateMmaKernelPatterns(KernelPatternSet &patterns,
                                           const KernelOptions &options) {
  patterns.push_back(std::make_unique<MmaKernelPattern>(options));
}
