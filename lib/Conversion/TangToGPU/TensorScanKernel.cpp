//===- TensorScanKernel.cpp - the kernel of a tang.tensor_scan -----------===//
//
// A scan of affine maps S -> A_t S + B_t on [K, V] states (the monoid is
// the composition of affine maps, KernelMatchers' isAffineComposition):
//
//   S[p, t, i, j] = B[p, t, i, j] + sum_k A[p, t, i, k] S[p, t - 1, k, j]
//
// with S[p, -1] the init's state (zero without one). Where threads may
// cooperate (not the portable backends' one thread per point): one
// workgroup per
// parallel point and block of Vb state columns keeps its [K, Vb] slice of
// the state in workgroup memory and carries it along the steps; each
// thread computes a tile of rows x columns of the next state (its
// transition rows read once per k for all its columns), then the slice is
// replaced between two barriers (f32 states, 4 columns a thread, K a
// multiple of 4: 16-byte loads of 4 k of a transition row and of a slice
// row's columns). On targets with asynchronous copies (sm_80 on) each
// step's transition is copied whole into one of two workgroup buffers
// (cp.async) while the step before computes from the other; elsewhere the
// sum over k runs in trips of up to 16 k whose transition loads are issued
// one trip ahead (across steps too). Each step's inputs B are loaded one
// step ahead, so that global loads are in flight while the multiply-adds
// run. Otherwise one thread per parallel point
// and column carries its column. O(K^2 V) per step, in order: the steps of
// --tang-chunk-affine-scan's chunks (a few hundred), not the tokens of a
// long sequence. The products of the transitions (the scan's first result)
// are not computed: the kernel form refuses a scan that uses them.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tang;

namespace {
/// The kernel's shape: workgroups of rowThreads x colThreads threads, each
/// with a tile of rowsPer rows (rows ry, ry + rowThreads, ...) and colsPer
/// columns (cx * colsPer + c) of a block of `block` columns.
struct AffineScanShape {
  int64_t block, colsPer, colThreads, rowThreads, rowsPer;
};

/// The workgroup memory the slice may take: the target's, at most the
/// 48 KiB of a static allocation (as the tiled kernel's tiles).
int64_t getSliceBudget(Operation *op) {
  return std::min<int64_t>(getTarget(op).getSharedPerBlock(), 48 * 1024);
}

/// Up to 32 columns a block (fewer where the slice would outgrow half the
/// budget), up to 256 threads (the target's most, if fewer).
AffineScanShape chooseAffineScanShape(Operation *op, int64_t kDim, int64_t vDim,
                                      int64_t elementBytes) {
  int64_t threads = std::min<int64_t>(256, getTarget(op).getMaxThreads());
  int64_t budget = getSliceBudget(op);
  AffineScanShape s;
  s.block = 1;
  while (s.block < 32 && s.block < vDim &&
         kDim * s.block * 2 * elementBytes <= budget / 2)
    s.block *= 2;
  s.colsPer = std::min<int64_t>(4, s.block);
  s.colThreads = s.block / s.colsPer;
  s.rowThreads = std::max<int64_t>(1, std::min(threads / s.colThreads, kDim));
  s.rowsPer = llvm::divideCeil(kDim, s.rowThreads);
  return s;
}
/// One thread per parallel point and state column, which carries its
/// column along the steps through the states it stored (no thread waits
/// for another): for launchers without barriers.
LogicalResult emitColumnPerThread(OpBuilder &b, TensorScanOp op,
                                  IRMapping &tensors, ValueRange outputs,
                                  Kernel &k) {
  Location loc = op.getLoc();
  auto bType = cast<RankedTensorType>(op.getElements()[1].getType());
  unsigned rank = bType.getRank();
  int64_t steps = bType.getDimSize(rank - 3);
  int64_t kDim = bType.getDimSize(rank - 2);
  OpBuilder::InsertionGuard guard(b);
  FailureOr<SmallVector<Value>> point = emitThreadPerColumn(b, op, bType, 3, k);
  if (failed(point))
    return failure();
  ArrayRef<Value> parallel = ArrayRef<Value>(*point).drop_back();
  Value col = point->back();
  Value a = tensors.lookup(op.getElements()[0]);
  Value bIn = tensors.lookup(op.getElements()[1]);
  Value init = op.getInit().empty() ? Value() : tensors.lookup(op.getInit()[1]);
  Value out = outputs[1];
  Type element = bType.getElementType();
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto at = [&](std::initializer_list<Value> tail) {
    SmallVector<Value> coords(parallel.begin(), parallel.end());
    coords.append(tail.begin(), tail.end());
    return coords;
  };
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0));
  auto steps_ = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1));
  b.setInsertionPointToStart(steps_.getBody());
  Value t = steps_.getInductionVar();
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, cst(0));
  auto rows = scf::ForOp::create(b, loc, cst(0), cst(kDim), cst(1));
  b.setInsertionPointToStart(rows.getBody());
  Value i = rows.getInductionVar();
  Value bias = memref::LoadOp::create(b, loc, bIn, at({t, i, col}));
  auto sum =
      scf::ForOp::create(b, loc, cst(0), cst(kDim), cst(1), ValueRange{bias});
  b.setInsertionPointToStart(sum.getBody());
  Value kk = sum.getInductionVar();
  Value aik = memref::LoadOp::create(b, loc, a, at({t, i, kk}));
  // The previous state's (k, j): the init's (or zero) at the first step.
  auto prev = scf::IfOp::create(b, loc, TypeRange{element}, first,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&prev.getThenRegion().front());
    Value s0 =
        init ? memref::LoadOp::create(b, loc, init, at({kk, col})).getResult()
             : zero;
    scf::YieldOp::create(b, loc, s0);
    b.setInsertionPointToStart(&prev.getElseRegion().front());
    Value before = arith::SubIOp::create(b, loc, t, cst(1));
    Value s = memref::LoadOp::create(b, loc, out, at({before, kk, col}));
    scf::YieldOp::create(b, loc, s);
  }
  Value prod = arith::MulFOp::create(b, loc, aik, prev.getResult(0));
  Value acc = arith::AddFOp::create(b, loc, sum.getRegionIterArgs()[0], prod);
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(sum);
  memref::StoreOp::create(b, loc, sum.getResult(0), out, at({t, i, col}));
  return success();
}

} // namespace

LogicalResult mlir::tang::emitAffineScanKernel(OpBuilder &b, TensorScanOp op,
                                               IRMapping &tensors,
                                               ValueRange outputs, Kernel &k,
                                               bool cooperative) {
  if (!cooperative)
    return emitColumnPerThread(b, op, tensors, outputs, k);
  Location loc = op.getLoc();
  auto bType = cast<RankedTensorType>(op.getElements()[1].getType());
  unsigned rank = bType.getRank();
  int64_t steps = bType.getDimSize(rank - 3);
  int64_t kDim = bType.getDimSize(rank - 2);
  int64_t vDim = bType.getDimSize(rank - 1);
  ArrayRef<int64_t> parallelShape = bType.getShape().take_front(rank - 3);
  Type element = bType.getElementType();
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  AffineScanShape shape = chooseAffineScanShape(op, kDim, vDim, elementBytes);
  if (kDim * shape.block * elementBytes > getSliceBudget(op))
    return op.emitOpError() << "has states of " << kDim
                            << " rows, more than one workgroup's memory holds "
                               "a column of";
  int64_t colBlocks = llvm::divideCeil(vDim, shape.block);
  int64_t points = colBlocks;
  for (int64_t e : parallelShape)
    points *= e;
  if (points > std::numeric_limits<int32_t>::max())
    return op.emitOpError()
           << "has " << points << " workgroups, more than one launch covers";
  k.grid = {points, 1, 1};
  k.block = {shape.colThreads * shape.rowThreads, 1, 1};

  OpBuilder::InsertionGuard guard(b);
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  // With f32 states, 4 columns a thread and K a multiple of 4, the sum
  // takes k in quads: each of the thread's transition rows as one 16-byte
  // load (A[t, i, k..k+3]) and each of the 4 slice rows' columns as one
  // (slice[k + q, c..c+3]): 8 loads for 64 multiply-adds, not 32.
  bool vectors = shape.colsPer == 4 && kDim % 4 == 0 && element.isF32();
  // Staged transitions: on targets with asynchronous copies to workgroup
  // memory (cp.async: sm_80 on, the targets with tensor cores), each
  // step's transition A[t] is copied whole into one of two buffers while
  // the step before computes from the other, so no multiply-add waits for
  // global memory (the loads ahead in registers still waited: 0.54 ms for
  // the 4096-token gated delta rule's 64 chunk steps of 128 x 128 states
  // on an H100). The slice and both buffers in dynamic workgroup memory.
  int64_t threads = shape.colThreads * shape.rowThreads;
  int64_t bufferBytes = kDim * kDim * elementBytes;
  int64_t sliceBytes = kDim * shape.block * elementBytes;
  bool staged =
      vectors && getTarget(op).getTensorCores() != TensorCoreKind::None &&
      (kDim * kDim / 4) % threads == 0 &&
      2 * bufferBytes + sliceBytes <= getTarget(op).getSharedPerBlock();
  Value slice, buffers;
  if (staged) {
    Value smem = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                        space));
    buffers = memref::ViewOp::create(
        b, loc, MemRefType::get({2, kDim, kDim}, element, AffineMap(), space),
        smem, cst(0), ValueRange{});
    slice = memref::ViewOp::create(
        b, loc,
        MemRefType::get({kDim, shape.block}, element, AffineMap(), space), smem,
        cst(2 * bufferBytes), ValueRange{});
    k.sharedBytes = 2 * bufferBytes + sliceBytes;
  } else {
    slice = k.func.addWorkgroupAttribution(
        MemRefType::get({kDim, shape.block}, element, AffineMap(), space), loc);
    // Rows of the slice are read as 16-byte vectors.
    k.func.setWorkgroupAttributionAttr(k.func.getNumWorkgroupAttributions() - 1,
                                       LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(16));
  }
  // The workgroup's parallel point and column block; the thread's tile.
  Value rest = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value colBlock = arith::RemUIOp::create(b, loc, rest, cst(colBlocks));
  rest = arith::DivUIOp::create(b, loc, rest, cst(colBlocks));
  SmallVector<Value> parallel(parallelShape.size());
  for (int i = static_cast<int>(parallelShape.size()) - 1; i >= 0; --i) {
    parallel[i] = arith::RemUIOp::create(b, loc, rest, cst(parallelShape[i]));
    rest = arith::DivUIOp::create(b, loc, rest, cst(parallelShape[i]));
  }
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value cx = arith::RemUIOp::create(b, loc, tid, cst(shape.colThreads));
  Value ry = arith::DivUIOp::create(b, loc, tid, cst(shape.colThreads));
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  auto mul = [&](Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, cst(y)).getResult();
  };
  auto less = [&](Value x, int64_t bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                                 cst(bound))
        .getResult();
  };
  auto clamp = [&](Value x, int64_t bound) {
    return arith::MinUIOp::create(b, loc, x, cst(bound - 1)).getResult();
  };
  // Rows i_m = ry + m rowThreads (clamped for loads, stores guarded);
  // slice columns c_c = cx colsPer + c, state columns colBlock block + c_c.
  SmallVector<Value> rows, rowOk, sliceCols, cols, colOk;
  for (int64_t m = 0; m < shape.rowsPer; ++m) {
    Value i = add(ry, cst(m * shape.rowThreads));
    rows.push_back(clamp(i, kDim));
    rowOk.push_back(less(i, kDim));
  }
  for (int64_t c = 0; c < shape.colsPer; ++c) {
    Value sc = add(mul(cx, shape.colsPer), cst(c));
    sliceCols.push_back(sc);
    Value j = add(mul(colBlock, shape.block), sc);
    cols.push_back(clamp(j, vDim));
    colOk.push_back(less(j, vDim));
  }
  Value a = tensors.lookup(op.getElements()[0]);
  Value bIn = tensors.lookup(op.getElements()[1]);
  Value init = op.getInit().empty() ? Value() : tensors.lookup(op.getInit()[1]);
  Value out = outputs[1];
  auto at = [&](ArrayRef<Value> tail) {
    SmallVector<Value> coords(parallel);
    coords.append(tail.begin(), tail.end());
    return coords;
  };
  auto load = [&](Value buf, ArrayRef<Value> coords) {
    return memref::LoadOp::create(b, loc, buf, coords).getResult();
  };
  // Stores `v` where `ok`.
  auto storeIf = [&](Value ok, Value v, Value buf, ArrayRef<Value> coords) {
    auto guard = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    memref::StoreOp::create(b, loc, v, buf, coords);
  };
  auto both = [&](Value x, Value y) {
    return arith::AndIOp::create(b, loc, x, y).getResult();
  };
  // The slice starts as the init's state (or zero).
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0));
  for (int64_t m = 0; m < shape.rowsPer; ++m)
    for (int64_t c = 0; c < shape.colsPer; ++c) {
      Value s0 = init ? load(init, at({rows[m], cols[c]})) : zero;
      storeIf(rowOk[m], s0, slice, {rows[m], sliceCols[c]});
    }
  gpu::BarrierOp::create(b, loc);

  int64_t kStep = vectors ? 4 : 1;
  // The transitions come from global memory, the slice from the
  // workgroup's: a trip of the sum takes `group` k steps, and the loads of
  // the next trip's transition rows (the next step's first, on the last
  // trip) are issued before this trip's multiply-adds, so that they are in
  // flight while it computes. The next step's inputs B likewise, before
  // its sum. A trip's load waiting a full memory latency per k step was
  // the kernel's cost (the state pass of the gated delta rule, 64 chunk
  // steps of 128 x 128 states, ran at one load round trip per trip).
  int64_t perTrip = 1;
  while (perTrip < 4 && (kDim / kStep) % (perTrip * 2) == 0)
    perTrip *= 2;
  int64_t group = kStep * perTrip;
  auto quad = VectorType::get({kStep}, element);
  // Staged: A[t] into buffer `slot`, 16 bytes a copy, the workgroup's
  // threads taking consecutive chunks of its rows.
  auto copyA = [&](Value t, Value slot) {
    int64_t chunksPerRow = kDim / 4;
    for (int64_t n = 0; n < kDim * chunksPerRow / threads; ++n) {
      Value chunk = add(tid, cst(n * threads));
      Value row = arith::DivUIOp::create(b, loc, chunk, cst(chunksPerRow));
      Value col =
          mul(arith::RemUIOp::create(b, loc, chunk, cst(chunksPerRow)), 4);
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), buffers,
          ValueRange{slot, row, col}, a, at({t, row, col}), b.getIndexAttr(4),
          Value(), b.getUnitAttr());
    }
    return nvgpu::DeviceAsyncCreateGroupOp::create(
               b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()),
               ValueRange{})
        .getResult();
  };
  // Staged: the transition rows of a trip from the step's buffer.
  auto readA = [&](Value slot, Value k0) {
    SmallVector<Value> values;
    for (int64_t u = 0; u < perTrip; ++u)
      for (int64_t m = 0; m < shape.rowsPer; ++m)
        values.push_back(vector::LoadOp::create(
            b, loc, quad, buffers,
            ValueRange{slot, rows[m], add(k0, cst(u * kStep))},
            /*nontemporal=*/false, llvm::Align(16)));
    return values;
  };
  auto loadA = [&](Value t, Value k0) {
    SmallVector<Value> values;
    for (int64_t u = 0; u < perTrip; ++u)
      for (int64_t m = 0; m < shape.rowsPer; ++m) {
        SmallVector<Value> coords = at({t, rows[m], add(k0, cst(u * kStep))});
        values.push_back(vectors ? vector::LoadOp::create(
                                       b, loc, quad, a, coords,
                                       /*nontemporal=*/false, llvm::Align(16))
                                       .getResult()
                                 : load(a, coords));
      }
    return values;
  };
  auto loadB = [&](Value t) {
    SmallVector<Value> values;
    for (int64_t m = 0; m < shape.rowsPer; ++m)
      for (int64_t c = 0; c < shape.colsPer; ++c)
        values.push_back(load(bIn, at({t, rows[m], cols[c]})));
    return values;
  };
  int64_t numB = shape.rowsPer * shape.colsPer;
  SmallVector<Value> carried = loadB(cst(0));
  if (staged)
    copyA(cst(0), cst(0));
  else
    llvm::append_range(carried, loadA(cst(0), cst(0)));
  auto stepLoop =
      scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1), carried);
  b.setInsertionPointToStart(stepLoop.getBody());
  Value t = stepLoop.getInductionVar();
  ValueRange stepArgs = stepLoop.getRegionIterArgs();
  Value lastStep = cst(steps - 1);
  Value nextT = arith::MinUIOp::create(b, loc, add(t, cst(1)), lastStep);
  SmallVector<Value> nextB = loadB(nextT);
  Value slot;
  if (staged) {
    // A[t + 1] (the last again at the end: copied, not read) into the
    // buffer step t - 1 read (every thread is past it: the barriers
    // below); then A[t] has landed, for every thread once all have waited.
    slot = arith::RemUIOp::create(b, loc, t, cst(2));
    Value group =
        copyA(nextT, arith::RemUIOp::create(b, loc, add(t, cst(1)), cst(2)));
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(1));
    gpu::BarrierOp::create(b, loc);
  }
  SmallVector<Value> sumInit(stepArgs.begin(), stepArgs.end());
  auto sum = scf::ForOp::create(b, loc, cst(0), cst(kDim), cst(group), sumInit);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(sum.getBody());
    Value kk = sum.getInductionVar();
    ValueRange args = sum.getRegionIterArgs();
    SmallVector<Value> next(args.take_front(numB));
    SmallVector<Value> current, prefetched;
    if (staged) {
      current = readA(slot, kk);
    } else {
      current.assign(args.begin() + numB, args.end());
      // The next trip's transition rows: this step's next k, or the next
      // step's first (the last step's again at its end: read, not used).
      Value nextK = add(kk, cst(group));
      Value wrap = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         nextK, cst(kDim));
      Value tripT = arith::SelectOp::create(b, loc, wrap, nextT, t);
      Value tripK = arith::SelectOp::create(b, loc, wrap, cst(0), nextK);
      prefetched = loadA(tripT, tripK);
    }
    // Fused multiply-adds: one instruction a product.
    auto madd = [&](int64_t m, int64_t c, Value x, Value y) {
      Value &r = next[m * shape.colsPer + c];
      r = emitMultiplyAdd(b, loc, r, x, y);
    };
    for (int64_t u = 0; u < perTrip; ++u) {
      Value k0 = add(kk, cst(u * kStep));
      ArrayRef<Value> left =
          ArrayRef(current).slice(u * shape.rowsPer, shape.rowsPer);
      if (vectors) {
        for (int64_t q = 0; q < 4; ++q) {
          Value right = vector::LoadOp::create(
              b, loc, quad, slice, ValueRange{add(k0, cst(q)), sliceCols[0]},
              /*nontemporal=*/false, llvm::Align(16));
          for (int64_t m = 0; m < shape.rowsPer; ++m) {
            Value x = vector::ExtractOp::create(b, loc, left[m], q);
            for (int64_t c = 0; c < 4; ++c)
              madd(m, c, x, vector::ExtractOp::create(b, loc, right, c));
          }
        }
        continue;
      }
      SmallVector<Value> right;
      for (int64_t c = 0; c < shape.colsPer; ++c)
        right.push_back(load(slice, {k0, sliceCols[c]}));
      for (int64_t m = 0; m < shape.rowsPer; ++m)
        for (int64_t c = 0; c < shape.colsPer; ++c)
          madd(m, c, left[m], right[c]);
    }
    llvm::append_range(next, prefetched);
    scf::YieldOp::create(b, loc, next);
  }
  // Every thread has read the previous state before any replaces it.
  gpu::BarrierOp::create(b, loc);
  for (int64_t m = 0; m < shape.rowsPer; ++m)
    for (int64_t c = 0; c < shape.colsPer; ++c) {
      Value v = sum.getResult(m * shape.colsPer + c);
      storeIf(rowOk[m], v, slice, {rows[m], sliceCols[c]});
      storeIf(both(rowOk[m], colOk[c]), v, out, at({t, rows[m], cols[c]}));
    }
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> toNext = nextB;
  llvm::append_range(toNext, sum.getResults().drop_front(numB));
  scf::YieldOp::create(b, loc, toNext);
  return success();
}
