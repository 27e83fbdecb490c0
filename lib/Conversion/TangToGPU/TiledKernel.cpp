//===- TiledKernel.cpp - register-tiled SIMT contractions ----------------===//
//
// A matmul-like comprehension whose SIMT schedule gives each thread several
// points of its last two parallel indices (rows i, columns j):
//   tile[i] = R x threads[i], tile[j] = C x threads[j], R x C in 2 .. 16,
// mapped j -> block_x, i -> block_y, the other parallel indices one point
// a block (block_z). A block of threads[j] x threads[i] threads computes a
// tile[i] x tile[j] tile of the result; thread (tx, ty) the rows
// i0 + ty + r threads[i] and columns j0 + tx + c threads[j] (consecutive
// threads on consecutive columns: coalesced reads of the column operand
// and coalesced stores). The R x C reductions run in one loop nest over
// the reduced indices carrying R x C carriers, each in index order (any
// monoid, as the point kernel); the summand is emitted per point, so a
// read that does not depend on the column is the same load for the C
// points of a row (and one that does not depend on the row for the R
// points of a column): after CSE, R + C loads a step feed R x C products
// instead of 2 R C. An epilogue (the outer body around a nested
// reduction) runs per point after the loops. Points past an extent compute
// on clamped indices and store nothing.
//
// No workgroup memory and no barriers: the tiles' reuse comes from
// registers and the caches, and the C backend, whose launcher runs a
// block's items in turn, runs it as it is. Staging the operand tiles in
// workgroup memory is the next step.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "Tang/Analysis/ShapeClass.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The most points one thread computes (its carriers live in registers).
constexpr int64_t kMaxPointsPerThread = 16;

/// How a comprehension runs as a register-tiled kernel.
struct TiledPlan {
  /// The reduction: the comprehension itself, or the one nested in its
  /// body (then the rest of the body is the epilogue).
  ComprehensionOp red;
  /// Rows and columns: the last two parallel indices.
  unsigned i, j;
  int64_t threadsI, threadsJ, pointsI, pointsJ;
};

/// Whether `red`'s body (nested in `op`'s) uses nothing `op`'s body
/// computes besides its indices: then the reduction can run before the
/// rest of the body, for every point at once.
bool usesOnlyIndicesOf(ComprehensionOp red, ComprehensionOp op) {
  Block &outer = op.getBodyBlock();
  bool ok = true;
  red.walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      if (isa<BlockArgument>(v)) {
        // An index of `op` or of a comprehension inside `red`.
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() == &outer)
        ok = false;
    }
  });
  return ok;
}

/// The plan of `op`, or none (the reason for debug output in `why`).
std::optional<TiledPlan> getTiledPlan(ComprehensionOp op, const Kernel &k,
                                      std::string &why) {
  auto fail = [&](const Twine &reason) -> std::optional<TiledPlan> {
    why = reason.str();
    return std::nullopt;
  };
  ScheduleAttr s = op.getScheduleAttr();
  unsigned np = op.getNumParallel();
  if (!s ||
      (s.getKernel() != KernelKind::Auto && s.getKernel() != KernelKind::Simt))
    return fail("no SIMT schedule");
  if (k.sizes || hasSymbolicSizes(op) || np < 2 || op.getNumResults() == 0)
    return fail("symbolic sizes, fewer than two parallel indices or no "
                "result");
  if (classifyComprehension(op) != ShapeClass::MatmulLike)
    return fail("not matmul-like");
  TiledPlan plan;
  plan.i = np - 2;
  plan.j = np - 1;
  ArrayRef<int64_t> tile = s.getTile(), threads = s.getThreads();
  ArrayRef<Mapping> mapping = s.getMapping();
  if (tile.size() != op.getNumIndices() || threads.size() != tile.size() ||
      mapping.size() != tile.size())
    return fail("the schedule's sizes do not match the indices");
  plan.threadsI = threads[plan.i];
  plan.threadsJ = threads[plan.j];
  if (plan.threadsI < 1 || plan.threadsJ < 1 || tile[plan.i] % plan.threadsI ||
      tile[plan.j] % plan.threadsJ || mapping[plan.i] != Mapping::BlockY ||
      mapping[plan.j] != Mapping::BlockX)
    return fail("the schedule does not tile the rows over block_y and the "
                "columns over block_x in whole threads");
  plan.pointsI = tile[plan.i] / plan.threadsI;
  plan.pointsJ = tile[plan.j] / plan.threadsJ;
  int64_t points = plan.pointsI * plan.pointsJ;
  if (points < 2 || points > kMaxPointsPerThread)
    return fail("not 2 to 16 points a thread");
  if (plan.threadsI * plan.threadsJ > getTarget(op).getMaxThreads())
    return fail("more threads than a block has");
  for (unsigned p = 0; p < plan.i; ++p)
    if (tile[p] != 1)
      return fail("a batch index is tiled");
  int64_t batch = 1;
  for (unsigned p = 0; p < plan.i; ++p)
    batch *= op.getExtent(p);
  if (batch > 65535 ||
      llvm::divideCeil(op.getExtent(plan.i), tile[plan.i]) > 65535 ||
      llvm::divideCeil(op.getExtent(plan.j), tile[plan.j]) > 65535)
    return fail("more tiles or batch points than the grid holds");
  if (op.getNumReduced()) {
    plan.red = op;
    // Every nested comprehension runs inside the summand, per point.
    return plan;
  }
  // An epilogue around one nested reduction over its own indices alone.
  SmallVector<ComprehensionOp> nested;
  op.walk([&](ComprehensionOp inner) {
    if (inner != op)
      nested.push_back(inner);
  });
  if (nested.size() != 1 || nested[0]->getBlock() != &op.getBodyBlock() ||
      nested[0].getNumParallel() != 0 || nested[0].getNumReduced() == 0)
    return fail("not one reduction nested in an epilogue");
  if (!usesOnlyIndicesOf(nested[0], op))
    return fail("the nested reduction uses values its epilogue computes");
  plan.red = nested[0];
  return plan;
}

LogicalResult emitTiledKernel(OpBuilder &b, ComprehensionOp op,
                              const TiledPlan &plan, IRMapping &tensors,
                              ValueRange outputs, Kernel &k) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(isLowPrecision(op));
  FailureOr<MonoidCodegen> monoid = MonoidCodegen::get(plan.red);
  if (failed(monoid))
    return failure();
  monoid->setApproximate(isLowPrecision(op));

  int64_t tileI = plan.threadsI * plan.pointsI,
          tileJ = plan.threadsJ * plan.pointsJ;
  int64_t extentI = op.getExtent(plan.i), extentJ = op.getExtent(plan.j);
  int64_t batch = 1;
  for (unsigned p = 0; p < plan.i; ++p)
    batch *= op.getExtent(p);
  k.grid = {static_cast<int64_t>(llvm::divideCeil(extentJ, tileJ)),
            static_cast<int64_t>(llvm::divideCeil(extentI, tileI)), batch};
  k.block = {plan.threadsJ, plan.threadsI, 1};

  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  using gpu::Dimension;
  Value tx = gpu::ThreadIdOp::create(b, loc, Dimension::x);
  Value ty = gpu::ThreadIdOp::create(b, loc, Dimension::y);
  Value i0 = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(
          b, loc, gpu::BlockIdOp::create(b, loc, Dimension::y), cst(tileI)),
      ty);
  Value j0 = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(
          b, loc, gpu::BlockIdOp::create(b, loc, Dimension::x), cst(tileJ)),
      tx);
  IRMapping base;
  Value rest = gpu::BlockIdOp::create(b, loc, Dimension::z);
  for (int p = static_cast<int>(plan.i) - 1; p >= 0; --p) {
    Value extent = cst(op.getExtent(p));
    base.map(op.getIndex(p), arith::RemUIOp::create(b, loc, rest, extent));
    rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  // Each point's row and column, and the same clamped into the extents
  // (what its reads use: a point past an extent computes on the last row
  // or column and stores nothing).
  SmallVector<Value> rows, cols, rowsIn, colsIn;
  auto along = [&](Value first, int64_t points, int64_t stride, int64_t extent,
                   SmallVector<Value> &at, SmallVector<Value> &in) {
    for (int64_t q = 0; q < points; ++q) {
      Value v =
          q ? arith::AddIOp::create(b, loc, first, cst(q * stride)).getResult()
            : first;
      at.push_back(v);
      in.push_back(
          extent % (points * stride) == 0
              ? v
              : arith::MinUIOp::create(b, loc, v, cst(extent - 1)).getResult());
    }
  };
  along(i0, plan.pointsI, plan.threadsI, extentI, rows, rowsIn);
  along(j0, plan.pointsJ, plan.threadsJ, extentJ, cols, colsIn);
  auto pointMapping = [&](int64_t r, int64_t c) {
    IRMapping m = base;
    m.map(op.getIndex(plan.i), rowsIn[r]);
    m.map(op.getIndex(plan.j), colsIn[c]);
    return m;
  };

  // The reductions: one loop nest over the reduced indices, R x C
  // carriers of `width` values each, point (r, c) at (r * C + c) * width.
  ComprehensionOp red = plan.red;
  unsigned firstReduced = red.getNumParallel();
  size_t width = monoid->getCarrierTypes().size();
  int64_t points = plan.pointsI * plan.pointsJ;
  SmallVector<Value> init;
  SmallVector<Value> identity = monoid->identity(b, loc);
  for (int64_t p = 0; p < points; ++p)
    llvm::append_range(init, identity);
  SmallVector<Value> lbs, ubs, steps;
  for (unsigned d = firstReduced; d < red.getNumIndices(); ++d) {
    lbs.push_back(cst(0));
    ubs.push_back(cst(red.getExtent(d)));
    steps.push_back(cst(1));
  }
  bool bodyFailed = false;
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, init,
      [&](OpBuilder &lb, Location, ValueRange ivs,
          ValueRange carried) -> scf::ValueVector {
        scf::ValueVector next;
        for (int64_t r = 0; r < plan.pointsI; ++r)
          for (int64_t c = 0; c < plan.pointsJ; ++c) {
            IRMapping m = pointMapping(r, c);
            for (auto [d, iv] : llvm::enumerate(ivs))
              m.map(red.getIndex(firstReduced + d), iv);
            FailureOr<SmallVector<Value>> yields =
                emitter.emitBody(lb, red.getBodyBlock(), m);
            ValueRange mine =
                carried.slice((r * plan.pointsJ + c) * width, width);
            if (failed(yields)) {
              bodyFailed = true;
              llvm::append_range(next, mine);
              continue;
            }
            llvm::append_range(next,
                               monoid->accumulate(lb, loc, mine, *yields));
          }
        return next;
      });
  if (bodyFailed)
    return failure();
  ValueRange sums = nest.results;

  // Per point: the finalised sums, the epilogue, the guarded stores.
  for (int64_t r = 0; r < plan.pointsI; ++r)
    for (int64_t c = 0; c < plan.pointsJ; ++c) {
      IRMapping m = pointMapping(r, c);
      SmallVector<Value> results = monoid->finalize(
          b, loc, sums.slice((r * plan.pointsJ + c) * width, width));
      if (red != op) {
        for (Operation &inner : op.getBodyBlock().without_terminator()) {
          if (&inner == red.getOperation()) {
            for (auto [res, v] : llvm::zip(red.getResults(), results))
              m.map(res, v);
            continue;
          }
          if (failed(emitter.emit(b, &inner, m)))
            return failure();
        }
        results = llvm::map_to_vector(op.getYield().getValues(),
                                      [&](Value v) { return m.lookup(v); });
      }
      Value inside;
      if (extentI % tileI)
        inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       rows[r], cst(extentI));
      if (extentJ % tileJ) {
        Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         cols[c], cst(extentJ));
        inside =
            inside ? arith::AndIOp::create(b, loc, inside, in).getResult() : in;
      }
      OpBuilder::InsertionGuard storeGuard(b);
      if (inside) {
        auto ifOp = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      }
      SmallVector<Value> at;
      for (unsigned p = 0; p < plan.i; ++p)
        at.push_back(m.lookup(op.getIndex(p)));
      at.push_back(rows[r]);
      at.push_back(cols[c]);
      for (auto [v, out] : llvm::zip(results, outputs)) {
        Type storage = cast<MemRefType>(out.getType()).getElementType();
        memref::StoreOp::create(b, loc, toStorage(b, loc, v, storage), out, at);
      }
    }
  return success();
}

/// A register-tiled SIMT contraction, when the schedule gives each thread
/// several points of the rows and columns (getTiledPlan).
struct TiledKernelPattern : KernelPattern {
  TiledKernelPattern() : KernelPattern("tiled") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    std::string why;
    std::optional<TiledPlan> plan = getTiledPlan(r.op, r.k, why);
    if (!plan)
      return notifyMatchFailure(r.op, why);
    return succeeded(
               emitTiledKernel(r.b, r.op, *plan, r.tensors, r.outputs, r.k))
               ? KernelMatch::Built
               : KernelMatch::Error;
  }
};

} // namespace

void mlir::tang::populateTiledKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<TiledKernelPattern>());
}
