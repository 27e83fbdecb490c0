//===- ColumnKernel.cpp - reductions down columns ---------------*- C++ -*-===//
//
// A reduction over leading (row) indices of tensors whose contiguous index
// is a parallel one: a bias's or a norm weight's gradient, a column sum,
// `dw[c] = sum_{b, l} dy[b, l, c] x[b, l, c] r[b, l]` (the shape class
// column_reduction). A block takes a strip of 32 v columns (a lane v
// consecutive columns, loaded 16 bytes at a time: a warp reads whole
// lines of a row) and a run of the rows; its warps take consecutive
// sub-runs. The warps' carriers combine through workgroup memory in warp
// order; with split k (`split_k` = s: the rows split among s blocks along
// block_y) each block writes its strip's carriers to a workspace and a
// second kernel combines the s in order and stores the results. Every
// combine keeps index order (runs of rows, then runs of runs): any
// associative monoid, the same bits every run.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "RowVectors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The column kernel of `op` (getColumnSchedule), its carriers through
/// the f32 workgroup buffer and workspace (32-bit each).
std::optional<ColumnSchedule> getColumnPlan(ComprehensionOp op) {
  std::optional<ColumnSchedule> plan = getColumnSchedule(op);
  if (!plan)
    return std::nullopt;
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(op);
  if (failed(mc) || !llvm::all_of(mc->getCarrierTypes(), [](Type t) {
        return t.isF32() || t.isSignlessInteger(32);
      }))
    return std::nullopt;
  return plan;
}

/// Builds the column reduction kernel (and with split k its combining
/// kernel) of `r` by `plan`. About 190 lines: the two kernels in launch
/// order, sharing the carriers' layout in the workspace.
LogicalResult emitColumnKernel(KernelRequest &r, const ColumnSchedule &plan) {
  ComprehensionOp op = r.op;
  Location loc = op.getLoc();
  OpBuilder &b = r.b;
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(op);
  if (failed(mc))
    return failure();
  Type elementType =
      cast<RankedTensorType>(op.getResultTypes()[0]).getElementType();
  bool approximate = elementType.isF16() || elementType.isBF16();
  mc->setApproximate(approximate);
  ArrayRef<Type> types = mc->getCarrierTypes();
  int64_t width = static_cast<int64_t>(types.size());
  int64_t v = plan.vector, strip = 32 * v;
  int64_t columns = op.getExtent(plan.c);
  int64_t outer = plan.outerPoints;
  auto cst = [&](OpBuilder &ob, int64_t x) {
    return arith::ConstantIndexOp::create(ob, loc, x).getResult();
  };
  // The outer indices of outer point `o` (row-major).
  auto outerIndices = [&](OpBuilder &ob, Value o) {
    SmallVector<Value> at(plan.outer.size());
    for (size_t i = plan.outer.size(); i-- > 0;) {
      Value ext = cst(ob, op.getExtent(plan.outer[i]));
      at[i] = i ? arith::RemUIOp::create(ob, loc, o, ext).getResult() : o;
      if (i)
        o = arith::DivUIOp::create(ob, loc, o, ext);
    }
    return at;
  };
  // Stores row results `total` (finalized) of column `col` at outer point
  // `o` into the outputs of `func`'s entry (`outputArgs`).
  SmallVector<unsigned> outputArgs = llvm::map_to_vector(
      r.outputs, [](Value o) { return cast<BlockArgument>(o).getArgNumber(); });
  auto storeResults = [&](OpBuilder &ob, Block &entry, ValueRange carrier,
                          Value o, Value col) {
    SmallVector<Value> results = mc->finalize(ob, loc, carrier);
    for (auto [x, argNo] : llvm::zip(results, outputArgs)) {
      Value out = entry.getArgument(argNo);
      SmallVector<Value> at = outerIndices(ob, o);
      at.push_back(col);
      Type storage = cast<MemRefType>(out.getType()).getElementType();
      memref::StoreOp::create(ob, loc, toStorage(ob, loc, x, storage), out, at);
    }
  };

  Value workspace;
  unsigned workspaceArg = 0;
  Kernel *combine = nullptr;
  if (plan.splits > 1) {
    workspace = r.addScratch(
        MemRefType::get({outer, plan.splits, columns, width}, b.getF32Type()));
    workspaceArg = cast<BlockArgument>(workspace).getArgNumber();
    combine = &r.addFollowUp();
  }

  // The partial kernel: strips x splits x outer points.
  Kernel &k = r.k;
  k.grid = {static_cast<int64_t>(llvm::divideCeil(columns, strip)), plan.splits,
            outer};
  k.block = {32 * plan.warps, 1, 1};
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value buf = k.func.addWorkgroupAttribution(
      MemRefType::get({plan.warps, strip, width}, b.getF32Type(), AffineMap(),
                      wgSpace),
      loc);
  BodyEmitter emitter(r.tensors, &k.func.getBody().front());
  emitter.setApproximate(approximate);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(b, 32));
  Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value o = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bx, cst(b, strip)),
      arith::MulIOp::create(b, loc, lane, cst(b, v)));
  // Lanes past the last column compute on the last v columns (in bounds)
  // and store nothing.
  Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first,
                                       cst(b, columns));
  Value col = arith::MinUIOp::create(b, loc, first, cst(b, columns - v));
  // The block's rows [start, end), the warp's [from, to) of them.
  int64_t chunk = llvm::divideCeil(plan.rows, plan.splits);
  int64_t sub = llvm::divideCeil(chunk, plan.warps);
  Value start = arith::MulIOp::create(b, loc, split, cst(b, chunk));
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, start, cst(b, chunk)),
      cst(b, plan.rows));
  Value from = arith::MinUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, start,
                            arith::MulIOp::create(b, loc, warp, cst(b, sub))),
      end);
  Value to = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, from, cst(b, sub)), end);
  SmallVector<Value> init;
  for (int64_t e = 0; e < v; ++e)
    llvm::append_range(init, mc->identity(b, loc));
  SmallVector<Operation *> ops = llvm::map_to_vector(
      op.getBodyBlock().without_terminator(), [](Operation &x) { return &x; });
  SmallVector<Value> outerAt = outerIndices(b, o);
  bool failedBody = false;
  auto loop = scf::ForOp::create(
      b, loc, from, to, cst(b, 1), init,
      [&](OpBuilder &lb, Location, Value row, ValueRange iter) {
        IRMapping mapping;
        for (auto [i, x] : llvm::zip(plan.outer, outerAt))
          mapping.map(op.getIndex(i), x);
        // The row's reduced indices, row-major.
        Value rest = row;
        for (unsigned i = op.getNumIndices() - 1; i >= op.getNumParallel();
             --i) {
          Value ext = cst(lb, op.getExtent(i));
          mapping.map(op.getIndex(i),
                      i == op.getNumParallel()
                          ? rest
                          : arith::RemUIOp::create(lb, loc, rest, ext));
          rest = arith::DivUIOp::create(lb, loc, rest, ext);
        }
        SmallVector<Value> next(iter);
        if (failed(emitUnrolled(
                lb, loc, ops, op.getIndex(plan.c), col, v, mapping, r.tensors,
                emitter, [&](OpBuilder &eb, int64_t e) {
                  SmallVector<Value> yields = llvm::map_to_vector(
                      op.getYield().getValues(),
                      [&](Value y) { return mapping.lookupOrDefault(y); });
                  SmallVector<Value> c = mc->accumulate(
                      eb, loc, ArrayRef<Value>(next).slice(e * width, width),
                      yields);
                  llvm::copy(c, next.begin() + e * width);
                })))
          failedBody = true;
        scf::YieldOp::create(lb, loc, next);
      });
  if (failedBody)
    return failure();

  // The warps' carriers through workgroup memory, combined in warp order
  // by the first warp's lanes.
  for (int64_t e = 0; e < v; ++e)
    for (int64_t w = 0; w < width; ++w)
      memref::StoreOp::create(
          b, loc, carrierToF32(b, loc, loop.getResult(e * width + w)), buf,
          ValueRange{warp,
                     arith::AddIOp::create(
                         b, loc, arith::MulIOp::create(b, loc, lane, cst(b, v)),
                         cst(b, e)),
                     cst(b, w)});
  gpu::BarrierOp::create(b, loc);
  Value writer = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp, cst(b, 0)),
      active);
  auto ifWriter = scf::IfOp::create(b, loc, writer, /*withElse=*/false);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&ifWriter.getThenRegion().front());
    Block &entry = k.func.getBody().front();
    for (int64_t e = 0; e < v; ++e) {
      Value slot = arith::AddIOp::create(
          tb, loc, arith::MulIOp::create(tb, loc, lane, cst(tb, v)),
          cst(tb, e));
      SmallVector<Value> total;
      for (int64_t w = 0; w < plan.warps; ++w) {
        SmallVector<Value> part;
        for (auto [j, t] : llvm::enumerate(types))
          part.push_back(
              carrierFromF32(tb, loc,
                             memref::LoadOp::create(
                                 tb, loc, buf,
                                 ValueRange{cst(tb, w), slot,
                                            cst(tb, static_cast<int64_t>(j))}),
                             t));
        total = w ? mc->combine(tb, loc, total, part) : part;
      }
      Value column = arith::AddIOp::create(tb, loc, col, cst(tb, e));
      if (!workspace) {
        storeResults(tb, entry, total, o, column);
        continue;
      }
      for (auto [j, x] : llvm::enumerate(total))
        memref::StoreOp::create(
            tb, loc, carrierToF32(tb, loc, x), workspace,
            ValueRange{o, split, column, cst(tb, static_cast<int64_t>(j))});
    }
  }
  if (!combine)
    return success();

  // The combining kernel: a thread per (outer point, column), the splits
  // in order.
  Block &entry = combine->func.getBody().front();
  OpBuilder cb = OpBuilder::atBlockEnd(&entry);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(cb, op, {outer, columns}, *combine);
  if (failed(point))
    return failure();
  Value ws = entry.getArgument(workspaceArg);
  auto splits = scf::ForOp::create(cb, loc, cst(cb, 0), cst(cb, plan.splits),
                                   cst(cb, 1), mc->identity(cb, loc));
  {
    OpBuilder lb = OpBuilder::atBlockBegin(splits.getBody());
    SmallVector<Value> part;
    for (auto [j, t] : llvm::enumerate(types))
      part.push_back(carrierFromF32(
          lb, loc,
          memref::LoadOp::create(
              lb, loc, ws,
              ValueRange{(*point)[0], splits.getInductionVar(), (*point)[1],
                         cst(lb, static_cast<int64_t>(j))}),
          t));
    scf::YieldOp::create(
        lb, loc, mc->combine(lb, loc, splits.getRegionIterArgs(), part));
  }
  storeResults(cb, entry, splits.getResults(), (*point)[0], (*point)[1]);
  return success();
}

/// A column reduction (getColumnPlan) as strips of columns per block.
struct ColumnKernelPattern : KernelPattern {
  ColumnKernelPattern() : KernelPattern("column") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    std::optional<ColumnSchedule> plan = getColumnPlan(r.op);
    if (!plan)
      return notifyMatchFailure(r.op, "no column reduction schedule");
    return failed(emitColumnKernel(r, *plan)) ? KernelMatch::Error
                                              : KernelMatch::Built;
  }
};

} // namespace

void mlir::tang::populateColumnKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<ColumnKernelPattern>());
}
