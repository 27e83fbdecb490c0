//===- MmaWgmma.cpp - tensor-core contractions on wgmma ---------*- C++ -*-===//
//
// The sm_90a half of the contraction emitter (MmaKernel.h): wgmma steps
// and main loop, and the warp-specialised persistent kernel (a producer
// warpgroup feeding consumer warpgroups through the ring; the bulk tensor
// copies are MmaEmitter.cpp's).
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

Value MmaEmitter::descriptor(Value byteAddress, int64_t lbo, int64_t sbo) {
  return emitWgmmaDescriptor(b, loc, byteAddress, lbo, sbo, cfg.rowBytes());
}

Value MmaEmitter::emitWgmmaStep(Value slot, Value acc) {
  MLIRContext *ctx = b.getContext();
  int64_t aStage = cfg.bm * cfg.bk * cfg.eb, bStage = cfg.bn * cfg.bk * cfg.eb;
  int64_t aBytes = cfg.stages * aStage;
  // This warpgroup's 64 rows of A.
  Value aBase = add(smemBase, mul(div(tid, 128), 64 * cfg.rowBytes()));
  Value bBase = add(smemBase, cst(aBytes));
  Type f32 = b.getF32Type();
  auto accType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(cfg.bn / 2, f32));
  Value aSlot = add(aBase, mul(slot, aStage));
  Value bSlot = add(bBase, mul(slot, bStage));
  auto wgmmaType = c.elementType.isBF16()  ? NVVM::WGMMATypes::bf16
                   : c.elementType.isF32() ? NVVM::WGMMATypes::tf32
                                           : NVVM::WGMMATypes::f16;
  auto typeAttr = NVVM::WGMMATypesAttr::get(ctx, wgmmaType);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // A k step is 32 bytes: k16 of 16-bit values, k8 of tf32.
  for (int64_t kk = 0; kk < cfg.rowBytes() / 32; ++kk) {
    // K-major operands: 128-byte rows, 8-row groups 1024 bytes apart; a
    // k16 step is 32 bytes along the row. The [k, n] operand: 64-column
    // blocks bk rows long, 8-row (k) groups 1024 bytes apart; a k16 step
    // is 16 rows.
    // Rows of bk values (128 or 64 bytes: the swizzle width).
    int64_t row = cfg.rowBytes();
    Value descA =
        c.aKContiguous
            ? descriptor(add(aSlot, cst(kk * 32)), 16, 8 * row)
            : descriptor(add(aSlot, cst(kk * 16 * row)), cfg.bk * row, 8 * row);
    Value descB =
        c.bKContiguous
            ? descriptor(add(bSlot, cst(kk * 32)), 16, 8 * row)
            : descriptor(add(bSlot, cst(kk * 16 * row)), cfg.bk * row, 8 * row);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accType, acc, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, 64, cfg.bn, 32 / cfg.eb), typeAttr,
        typeAttr, NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, c.aKContiguous ? NVVM::MMALayout::row
                                                     : NVVM::MMALayout::col),
        NVVM::MMALayoutAttr::get(ctx, c.bKContiguous ? NVVM::MMALayout::col
                                                     : NVVM::MMALayout::row),
        /*satfinite=*/nullptr);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

SmallVector<Value> MmaEmitter::emitWgmmaMainLoop() {
  MLIRContext *ctx = b.getContext();
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  // A ring of `stages` slots, stages - 2 steps in flight: the slot written
  // at step kt was read by the wgmma of step kt - 2, which every warpgroup
  // has waited for (wgmma.wait_group 1 at step kt - 1) before the barrier
  // of step kt.
  int64_t ahead = cfg.stages - 2;
  // The shortest run of k steps a block has (the last split's).
  int64_t steps = cfg.kSteps(c.extentK);
  int64_t shortest = steps - (cfg.splitK - 1) * cfg.stepsPerSplit(c.extentK);
  for (int64_t s = 0; s < ahead; ++s) {
    if (cfg.tma) {
      // Bulk copies of steps past the block's run are not issued.
      if (s < shortest) {
        emitTmaLoads(cst(s), cst(s));
      } else if (s < cfg.stepsPerSplit(c.extentK)) {
        auto inRun = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, cst(s),
                                  stepCount),
            /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&inRun.getThenRegion().front());
        emitTmaLoads(cst(s), cst(s));
      }
      continue;
    }
    emitLoads(cst(s), cst(s));
    lastGroup = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                        ValueRange{});
  }
  Type f32 = b.getF32Type();
  auto accType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(cfg.bn / 2, f32));
  Value init = LLVM::ZeroOp::create(b, loc, accType);
  auto loop =
      scf::ForOp::create(b, loc, cst(0), stepCount, cst(1), ValueRange{init});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value slot = rem(kt, cfg.stages);
    Value next = add(kt, cst(ahead));
    if (cfg.tma) {
      // Every warpgroup is past step kt - 1 (so the wgmma of step kt - 2
      // is done): thread 0 refills that step's slot, then all wait for
      // step kt's copies.
      gpu::BarrierOp::create(b, loc);
      auto inK = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next,
                                stepCount),
          /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&inK.getThenRegion().front());
        emitTmaLoads(next, rem(next, cfg.stages));
      }
      emitTmaWait(kt, slot);
    } else {
      // Step kt has landed: this thread's copies, then (fence + barrier)
      // everyone's, visible to the tensor cores' async proxy.
      nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup,
                                       b.getI32IntegerAttr(ahead - 1));
      NVVM::FenceProxyOp::create(
          b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
          NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
      gpu::BarrierOp::create(b, loc);
      emitLoads(next, rem(next, cfg.stages));
      nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, ValueRange{});
    }

    Value acc = emitWgmmaStep(slot, loop.getRegionIterArgs()[0]);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(1));
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
  SmallVector<Value> acc;
  for (int64_t i = 0; i < cfg.bn / 2; ++i)
    acc.push_back(LLVM::ExtractValueOp::create(b, loc, loop.getResult(0),
                                               ArrayRef<int64_t>{i}));
  return acc;
}

/// Long by design (about 170 lines): the persistent kernel's two roles,
/// producer and consumers, side by side in the order their mbarrier
/// handshakes pair up, which is what a reader must check.
LogicalResult MmaEmitter::emitWarpSpecialized() {
  MLIRContext *ctx = b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Shared memory from a 1024-byte aligned base: the ring; the result
  // tile, apart from the ring (the producer refills the ring during the
  // epilogue), in column slices as wide as fit beside a ring of the
  // configured depth (the depth is what hides the copies' latency); then
  // the full and the empty mbarrier of each slot.
  const int64_t kMaxShared = cfg.maxShared;
  int64_t width = cfg.bn;
  auto bytes = [&] {
    return 1024 + cfg.ringBytes() + cfg.bm * (width + 8) * 4 + 16 * cfg.stages;
  };
  while (bytes() > kMaxShared && width > 32)
    width /= 2;
  while (bytes() > kMaxShared && cfg.stages > 2)
    --cfg.stages;
  if (bytes() > kMaxShared)
    return op.emitOpError()
           << "needs " << bytes() << " bytes of shared memory for its tiles";
  int64_t cOffset = cfg.ringBytes(), cBytes = cfg.bm * (width + 8) * 4;
  k.sharedBytes = bytes();

  // A persistent grid: one block per multiprocessor, each taking tiles
  // bid, bid + grid, ... in the grouped order.
  const int64_t kPersistentBlocks = cfg.smCount;
  int64_t tilesN = llvm::divideCeil(c.extentN, cfg.bn);
  int64_t tilesM = llvm::divideCeil(c.extentM, cfg.bm);
  int64_t batchCount = 1;
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != c.m && p != c.n)
      batchCount *= op.getExtent(p);
  int64_t perBatch = tilesM * tilesN, tiles = perBatch * batchCount;
  int64_t blocks = std::min(tiles, kPersistentBlocks);
  int64_t consumers = cfg.threads();
  // The register file (64 K) split: the producer warpgroup keeps 40 per
  // thread, the consumers share the rest (a multiple of 8, at most 232).
  constexpr int64_t kProducerRegisters = 40;
  int64_t consumerRegisters = std::min<int64_t>(
      232, (65536 / 128 - kProducerRegisters) / (consumers / 128) / 8 * 8);
  k.grid = {blocks, 1, 1};
  k.block = {consumers + 128, 1, 1};

  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), wg));
  Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  Value base =
      rem(arith::SubIOp::create(b, loc, cst(1024), rem(addr, 1024)), 1024);
  smemBase = add(addr, base);
  tileC =
      memref::ViewOp::create(
          b, loc,
          MemRefType::get({cfg.bm, width + 8}, b.getF32Type(), AffineMap(), wg),
          smem, add(base, cst(cOffset)), ValueRange{})
          .getResult();
  barriers = add(smemBase, cst(cOffset + cBytes));
  Value empty = add(barriers, cst(8 * cfg.stages));
  createTensorMaps();
  initBarriers(tid, barriers, cfg.stages, 1);
  initBarriers(tid, empty, cfg.stages, consumers / 128);
  gpu::BarrierOp::create(b, loc);

  int64_t steps = static_cast<int64_t>(llvm::divideCeil(c.extentK, cfg.bk));
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  auto forTiles = [&](Value it, function_ref<Value(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, bid, cst(tiles), cst(blocks),
                                   ValueRange{it});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value t = loop.getInductionVar();
    setTile(rem(t, perBatch), div(t, perBatch));
    scf::YieldOp::create(b, loc, body(loop.getRegionIterArgs()[0]));
  };
  auto roles =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                              tid, cst(consumers)),
                        /*withElseRegion=*/true);

  // The producer: one thread fills slot it % stages once the consumers
  // have released its previous contents (the empty barrier's phase of
  // the round before; a fresh barrier passes the wait for parity 1).
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getThenRegion().front());
    // Registers to the consumers: 40 here, 232 there (65536 in all for
    // two consumer warpgroups).
    NVVM::SetMaxRegisterOp::create(
        b, loc, b.getI32IntegerAttr(kProducerRegisters),
        NVVM::SetMaxRegisterActionAttr::get(
            ctx, NVVM::SetMaxRegisterAction::decrease));
    auto one = scf::IfOp::create(b, loc,
                                 arith::CmpIOp::create(b, loc,
                                                       arith::CmpIPredicate::eq,
                                                       tid, cst(consumers)),
                                 /*withElseRegion=*/false);
    b.setInsertionPointToStart(&one.getThenRegion().front());
    forTiles(cst(0), [&](Value it) {
      auto loop = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1),
                                     ValueRange{it});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = loop.getRegionIterArgs()[0];
      Value slot = rem(i, cfg.stages);
      waitBarrier(empty, slot, rem(add(div(i, cfg.stages), cst(1)), 2));
      emitTmaIssue(loop.getInductionVar(), slot);
      scf::YieldOp::create(b, loc, add(i, cst(1)));
      return loop.getResult(0);
    });
  }

  // The consumers: wait for a slot, multiply, release the slot of the
  // step before once its products are done (wait_group 1), then the
  // epilogue, column half by column half.
  LogicalResult result = success();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getElseRegion().front());
    NVVM::SetMaxRegisterOp::create(
        b, loc, b.getI32IntegerAttr(consumerRegisters),
        NVVM::SetMaxRegisterActionAttr::get(
            ctx, NVVM::SetMaxRegisterAction::increase));
    Type f32 = b.getF32Type();
    auto accType = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(cfg.bn / 2, f32));
    auto release = [&](Value step) {
      releaseByWarpgroup(tid, empty, rem(step, cfg.stages));
    };
    forTiles(cst(0), [&](Value it) {
      Value init = LLVM::ZeroOp::create(b, loc, accType);
      auto loop = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1),
                                     ValueRange{init, it});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        Value kt = loop.getInductionVar();
        Value i = loop.getRegionIterArgs()[1];
        Value slot = rem(i, cfg.stages);
        waitBarrier(barriers, slot, rem(div(i, cfg.stages), 2));
        Value acc = emitWgmmaStep(slot, loop.getRegionIterArgs()[0]);
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(1));
        auto notFirst = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, kt, cst(0)),
            /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&notFirst.getThenRegion().front());
          release(arith::SubIOp::create(b, loc, i, cst(1)));
        }
        scf::YieldOp::create(b, loc, ValueRange{acc, add(i, cst(1))});
      }
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
      Value end = loop.getResult(1);
      release(arith::SubIOp::create(b, loc, end, cst(1)));
      SmallVector<Value> acc;
      for (int64_t j = 0; j < cfg.bn / 2; ++j)
        acc.push_back(LLVM::ExtractValueOp::create(b, loc, loop.getResult(0),
                                                   ArrayRef<int64_t>{j}));
      for (int64_t h = 0; h < cfg.bn / width && succeeded(result); ++h) {
        result = emitEpilogue(acc, h * width, width);
        // The staging tile is rewritten next.
        syncConsumers();
      }
      return end;
    });
  }
  return result;
}
