//===- MmaEmitter.cpp - what both contraction kernels build -----*- C++ -*-===//
//
// The parts of the contraction emitter (MmaKernel.h) that the mma.sync and
// the wgmma kernels share: operand tiles into the shared-memory ring (by
// cp.async, or by bulk tensor copies on mbarriers), mma.sync's compute and
// main loop, the block's tile, and the epilogue that evaluates the rest of
// the body and stores the result.
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

void MmaEmitter::emitLoads(Value kt, Value slot) {
  Value k = c.red.getIndex(c.red.getNumIndices() - 1);
  Value k0 = mul(add(kt, stepBase), cfg.bk);
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

  // Then 16 bytes of the result per thread and step, through the body
  // (with split k: 16 bytes of the f32 sums into the workspace).
  Type storage =
      cast<RankedTensorType>(op.getResultTypes()[0]).getElementType();
  if (workspace)
    storage = b.getF32Type();
  int64_t bytes = std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
  int64_t v = 16 / bytes;
  if (c.extentN % v != 0 || width % v != 0)
    v = 1;
  int64_t perRow = width / v;
  int64_t steps = cfg.bm * perRow / cfg.threads();
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(storage.isF16() || storage.isBF16());
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1));
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
  if (workspace) {
    vector::StoreOp::create(b, loc, accs, workspace,
                            ValueRange{workspaceSlot, m, n},
                            /*nontemporal=*/false, llvm::Align(v * 4));
    return success();
  }
  return emitResults(emitter, batch, m, n, accs, v, outputs[0]);
}

LogicalResult MmaEmitter::emitResults(BodyEmitter &emitter,
                                      ArrayRef<Value> batchAt, Value m, Value n,
                                      Value accs, int64_t v, Value out) {
  Type storage = cast<MemRefType>(out.getType()).getElementType();
  int64_t bytes = std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
  SmallVector<Value> results;
  for (int64_t e = 0; e < v; ++e) {
    Value a = vector::ExtractOp::create(b, loc, accs, ArrayRef<int64_t>{e});
    if (c.red == op) {
      results.push_back(a);
      continue;
    }
    IRMapping mapping;
    for (unsigned p = 0; p < op.getNumParallel(); ++p)
      if (batchAt[p])
        mapping.map(op.getIndex(p), batchAt[p]);
    mapping.map(op.getIndex(c.m), m);
    mapping.map(op.getIndex(c.n), e ? add(n, cst(e)) : n);
    mapping.map(c.red.getResult(0), a);
    for (Operation &inner : op.getBodyBlock().without_terminator())
      if (&inner != c.red.getOperation() &&
          failed(emitter.emit(b, &inner, mapping)))
        return failure();
    Value y = op.getYield().getValues()[0];
    if (!mapping.contains(y)) {
      Operation *def = y.getDefiningOp();
      if (!def || failed(emitter.emit(b, def, mapping)))
        return failure();
    }
    results.push_back(mapping.lookup(y));
  }
  SmallVector<Value> outIndices;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    outIndices.push_back(p == c.m ? m : p == c.n ? n : batchAt[p]);
  Type compute = results.front().getType();
  if (v == 1) {
    Value r = results.front();
    if (r.getType() != storage)
      r = arith::TruncFOp::create(b, loc, storage, r);
    memref::StoreOp::create(b, loc, r, out, outIndices);
    return success();
  }
  Value r = vector::FromElementsOp::create(
      b, loc, VectorType::get({v}, compute), results);
  if (compute != storage)
    r = arith::TruncFOp::create(b, loc, VectorType::get({v}, storage), r);
  // Aligned: n is a multiple of v, rows are (c.extentN, a multiple of v)
  // elements long, buffers 16-byte aligned (the runtimes check).
  vector::StoreOp::create(b, loc, r, out, outIndices,
                          /*nontemporal=*/false, llvm::Align(v * bytes));
  return success();
}

LogicalResult MmaEmitter::emitSplitCombine() {
  int64_t batchCount = k.grid[2] / cfg.splitK;
  workspace = request.addScratch(MemRefType::get(
      {batchCount * cfg.splitK, c.extentM, c.extentN}, b.getF32Type()));
  unsigned workspaceArg = cast<BlockArgument>(workspace).getArgNumber();
  Kernel &combine = request.addFollowUp();
  Block &entry = combine.func.getBody().front();
  // The combining kernel reads the same tensors through its own
  // parameters (the same positions).
  IRMapping own;
  for (auto [t, arg] : tensors.getValueMap())
    if (auto a = dyn_cast<BlockArgument>(arg))
      own.map(t, entry.getArgument(a.getArgNumber()));
  Value out = entry.getArgument(cast<BlockArgument>(outputs[0]).getArgNumber());
  Value partials = entry.getArgument(workspaceArg);

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&entry);
  // v outputs (16 bytes of f32 partial sums) a thread.
  int64_t v = c.extentN % 4 == 0 ? 4 : 1;
  FailureOr<SmallVector<Value>> point = emitThreadPerPoint(
      b, op, {batchCount, c.extentM, c.extentN / v}, combine);
  if (failed(point))
    return failure();
  Value bp = (*point)[0], m = (*point)[1], n = mul((*point)[2], v);
  auto vecType = VectorType::get({v}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, vecType,
                                         DenseElementsAttr::get(vecType, 0.0f));
  // The splits in order: the same sums every run.
  auto splits =
      scf::ForOp::create(b, loc, cst(0), cst(cfg.splitK), cst(1), zero);
  {
    OpBuilder::InsertionGuard inLoop(b);
    b.setInsertionPointToStart(splits.getBody());
    Value slot = add(mul(bp, cfg.splitK), splits.getInductionVar());
    Value part = vector::LoadOp::create(
        b, loc, vecType, partials, ValueRange{slot, m, n},
        /*nontemporal=*/false, llvm::Align(4 * v));
    scf::YieldOp::create(
        b, loc,
        ValueRange{
            arith::AddFOp::create(b, loc, splits.getRegionIterArgs()[0], part)
                .getResult()});
  }
  SmallVector<Value> batchAt =
      decomposeBatch(op, [&](unsigned p) { return p == c.m || p == c.n; }, bp);
  BodyEmitter emitter(own, &entry);
  Type storage = cast<MemRefType>(out.getType()).getElementType();
  emitter.setApproximate(storage.isF16() || storage.isBF16());
  return emitResults(emitter, batchAt, m, n, splits.getResult(0), v, out);
}

void MmaEmitter::setTile(Value pid, Value batchIndex) {
  // Tiles in groups of cfg.groupM row tiles, column-major within a group.
  int64_t tilesN = llvm::divideCeil(c.extentN, cfg.bn);
  int64_t tilesM = llvm::divideCeil(c.extentM, cfg.bm);
  Value group = div(pid, cfg.groupM * tilesN);
  Value firstM = mul(group, cfg.groupM);
  Value inGroup = rem(pid, cfg.groupM * tilesN);
  // The last group may be short.
  Value groupRows = arith::MinUIOp::create(
      b, loc, cst(cfg.groupM),
      arith::SubIOp::create(b, loc, cst(tilesM), firstM));
  Value tileM = add(firstM, arith::RemUIOp::create(b, loc, inGroup, groupRows));
  Value tileN = arith::DivUIOp::create(b, loc, inGroup, groupRows);
  n0 = mul(tileN, cfg.bn);
  m0 = mul(tileM, cfg.bm);
  batch = decomposeBatch(
      op, [&](unsigned p) { return p == c.m || p == c.n; }, batchIndex);
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

void MmaEmitter::emitTmaSetup() {
  createTensorMaps();
  initBarriers(tid, barriers, cfg.stages, 1);
  gpu::BarrierOp::create(b, loc);
}

void MmaEmitter::createTensorMaps() {
  auto param = [&](ReadOp read, bool isA) {
    bool kContiguous = isA ? c.aKContiguous : c.bKContiguous;
    int64_t rows = kContiguous ? (isA ? cfg.bm : cfg.bn) : cfg.bk;
    // Blocked layouts ([k, m] or [k, n] operands) are filled 64 columns
    // (one 128-byte swizzled row) at a time.
    int64_t cols = kContiguous ? cfg.bk : 64;
    AffineMap map = read.getMap();
    unsigned rank = map.getNumResults();
    Value own = op.getIndex(isA ? c.m : c.n);
    Value kIndex = c.red.getIndex(c.red.getNumIndices() - 1);
    unsigned rowPos =
        llvm::find(read.getIndices(), kContiguous ? own : kIndex) -
        read.getIndices().begin();
    TensorMapParam t;
    t.swizzleBytes = 128;
    for (unsigned r = 0; r < rank; ++r)
      t.box.push_back(r + 1 == rank                              ? cols
                      : map.getResult(r).isFunctionOfDim(rowPos) ? rows
                                                                 : 1);
    t.buffer =
        cast<BlockArgument>(tensors.lookup(read.getTensor())).getArgNumber();
    return k.addTensorMap(std::move(t));
  };
  mapA = param(c.a, true);
  mapB = param(c.b, false);
}

void MmaEmitter::emitTmaLoads(Value kt, Value slot) {
  auto first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  emitTmaIssue(kt, slot);
}

void MmaEmitter::emitTmaIssue(Value kt, Value slot) {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  int64_t aStage = cfg.bm * cfg.bk * cfg.eb, bStage = cfg.bn * cfg.bk * cfg.eb;
  int64_t aBytes = cfg.stages * aStage;
  Value bar = toSharedPointer(add(barriers, mul(slot, 8)));
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), bar,
      arith::ConstantIntOp::create(b, loc, i32, aStage + bStage),
      NVVM::MemScopeKindAttr::get(ctx, NVVM::MemScopeKind::CTA),
      b.getBoolAttr(false), Value());
  Value kIndex = c.red.getIndex(c.red.getNumIndices() - 1);
  Value k0 = mul(add(kt, stepBase), cfg.bk);
  auto copy = [&](Value map, ReadOp read, Value dst, Value rowIndex, Value row,
                  Value colIndex, Value col) {
    bulkTensorCopy(map, getCoordinates(read, rowIndex, row, colIndex, col), dst,
                   bar);
  };
  auto operand = [&](Value map, ReadOp read, bool kContiguous, Value own,
                     int64_t ownTile, Value start, Value dst) {
    if (kContiguous) {
      copy(map, read, dst, own, start, kIndex, k0);
      return;
    }
    // 64-column blocks, bk rows each.
    for (int64_t j = 0; j < ownTile / 64; ++j)
      copy(map, read, add(dst, cst(j * cfg.bk * 128)), kIndex, k0, own,
           add(start, cst(64 * j)));
  };
  operand(mapA, c.a, c.aKContiguous, op.getIndex(c.m), cfg.bm, m0,
          add(smemBase, mul(slot, aStage)));
  operand(mapB, c.b, c.bKContiguous, op.getIndex(c.n), cfg.bn, n0,
          add(smemBase, add(cst(aBytes), mul(slot, bStage))));
}

void MmaEmitter::emitTmaWait(Value kt, Value slot) {
  waitBarrier(barriers, slot, rem(div(kt, cfg.stages), 2));
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
  // compute step kt, then wait for step kt + 1. Steps past K load zeros
  // (and with split k, steps past the block's run load what nobody uses).
  int64_t numAcc = (cfg.tm() / 16) * (cfg.tn() / 8) * 4;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> init(numAcc, zero);
  auto loop = scf::ForOp::create(b, loc, cst(0), stepCount, cst(1), init);
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
