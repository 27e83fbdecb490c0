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
// Emission
//===----------------------------------------------------------------------===//

LogicalResult MmaEmitter::emit() {
  MLIRContext *ctx = b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  int64_t eb = cfg.eb;
  int64_t aBytes = cfg.stages * cfg.bm * cfg.bk * eb;
  int64_t bBytes = cfg.stages * cfg.bk * cfg.bn * eb;
  int64_t cBytes = cfg.bm * (cfg.bn + 8) * 4;
  k.sharedBytes = cfg.sharedBytes();
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
  // Split k: the splits of a batch point's tiles along grid z.
  k.grid = {static_cast<int64_t>(llvm::divideCeil(c.extentN, cfg.bn)),
            static_cast<int64_t>(llvm::divideCeil(c.extentM, cfg.bm)),
            batchCount * cfg.splitK};
  k.block = {cfg.threads(), 1, 1};
  if (k.grid[2] > 65535 || k.grid[1] > 65535)
    return op.emitOpError() << "has " << batchCount
                            << " batch points or row tiles: more than the "
                               "grid holds";
  // Split k's workspace and second kernel come before the tensor maps.
  if (cfg.splitK > 1 && failed(emitSplitCombine()))
    return failure();

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, 32);
  Value warp = div(tid, 32);
  warpM = div(warp, cfg.warpsN);
  warpN = rem(warp, cfg.warpsN);
  int64_t steps = cfg.kSteps(c.extentK);
  stepBase = cst(0);
  stepCount = cst(steps);
  if (cfg.warpSpecialized)
    return emitWarpSpecialized();
  Value z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value batchIndex = z;
  if (cfg.splitK > 1) {
    // This block's run: stepsPerSplit steps from its split's first (the
    // last split's run ends at K).
    int64_t per = cfg.stepsPerSplit(c.extentK);
    workspaceSlot = z;
    batchIndex = div(z, cfg.splitK);
    stepBase = mul(rem(z, cfg.splitK), per);
    stepCount = arith::MinUIOp::create(
        b, loc, cst(per), arith::SubIOp::create(b, loc, cst(steps), stepBase));
  }
  setTile(add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), k.grid[0]),
              gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)),
          batchIndex);

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

namespace {

/// A contraction (matchMmaContraction) on tensor cores.
struct MmaKernelPattern : KernelPattern {
  MmaKernelPattern() : KernelPattern("mma") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::Contraction)
      return notifyMatchFailure(r.op, "not a contraction's kernel");
    if (failed(MmaEmitter(r, *r.choice.contraction, r.choice.mma).emit()))
      return KernelMatch::Error;
    return KernelMatch::Built;
  }
};

} // namespace

void mlir::tang::populateMmaKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<MmaKernelPattern>());
}
