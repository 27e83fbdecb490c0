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
// With a schedule whose memory is `shared` (the matmul-like schedule's) and
// one reduced index of static extent, the reads of the summand that use the
// rows but not the columns (the row operand) and those that use the columns
// but not the rows (the column operand) are staged in workgroup memory: per
// step of tk along the reduced index (the schedule's tile, halved until the
// f32 tiles fit the target's shared memory; the last step shorter), the
// block's threads load the tile[i] x tk and tk x tile[j] tiles (consecutive
// threads along the operand's contiguous index), a barrier, the R x C
// points take their operands from the tiles, a barrier. Other reads (both
// indices, neither, gathers) are loaded where the summand uses them.
// Without `shared` the kernel has no workgroup memory and no barriers: its
// reuse comes from registers and the caches.
//
// With staging and a schedule `vector` v of 2 or 4 dividing R and C, on a
// target whose accesses take 4 v bytes (CUDA's 16; not the portable
// backends, whose workgroup memory takes scalars), a thread's points are runs
// of v consecutive rows and columns instead (rows i0 + ty R + r, columns j0 +
// tx C + c), so that a step takes R / v + C / v v-element loads from the tiles
// (rows padded to a multiple of v, aligned to 16 bytes) for its R x C products
// rather than R + C single ones.
//
// Products and sums may contract into fused multiply-adds (allowContraction):
// an add-reduction's step is one instruction, not a multiply and an add.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "Tang/Analysis/ShapeClass.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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
  /// With staging: the reads of `red`'s body staged in workgroup memory,
  /// by operand (rows: uses i and not j; columns: j and not i), and the
  /// step along the reduced index.
  SmallVector<ReadOp> rowReads, colReads;
  int64_t step = 0;
  /// With staging: the runs of consecutive points a thread takes along
  /// rows and columns, loaded from the tiles as vectors (1: points strided
  /// by the threads, single loads).
  int64_t vector = 1;

  /// The tiles' padding: a row of a tile is `tile + pad()` words.
  int64_t pad() const { return vector > 1 ? vector : 1; }
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

/// Chooses what `plan` stages in workgroup memory (TiledPlan::rowReads,
/// colReads, step), if the schedule asks for shared memory and `red`
/// reduces over one index of static extent.
void planStaging(ComprehensionOp op, TiledPlan &plan) {
  ScheduleAttr s = op.getScheduleAttr();
  ComprehensionOp red = plan.red;
  if (s.getMemory().empty() || s.getMemory().front() != MemoryLevel::Shared ||
      red.getNumReduced() != 1 || red.isSymbolicExtent(red.getNumIndices() - 1))
    return;
  Value iIndex = op.getIndex(plan.i), jIndex = op.getIndex(plan.j);
  Value kIndex = red.getIndex(red.getNumIndices() - 1);
  for (Operation &inner : red.getBodyBlock().without_terminator()) {
    auto read = dyn_cast<ReadOp>(&inner);
    // Staged in f32: reads computed in f32 (f32, f16, bf16), no padding.
    if (!read || read.getFill() || !getComputeType(read.getType()).isF32() ||
        !readUses(read, kIndex))
      continue;
    bool usesI = readUses(read, iIndex), usesJ = readUses(read, jIndex);
    if (usesI && !usesJ)
      plan.rowReads.push_back(read);
    else if (usesJ && !usesI)
      plan.colReads.push_back(read);
  }
  if (plan.rowReads.empty() && plan.colReads.empty())
    return;
  int64_t tileI = plan.threadsI * plan.pointsI,
          tileJ = plan.threadsJ * plan.pointsJ;
  int64_t v = std::min<int64_t>(4, s.getVector());
  TargetAttr target = getTarget(op);
  if ((v == 2 || v == 4) && target.getChip() != kPortableChip &&
      target.getVectorBytes() >= 4 * v && plan.pointsI % v == 0 &&
      plan.pointsJ % v == 0)
    plan.vector = v;
  int64_t extentK = red.getExtent(red.getNumIndices() - 1);
  int64_t bytesPerStep =
      4 * ((tileI + plan.pad()) * int64_t(plan.rowReads.size()) +
           (tileJ + plan.pad()) * int64_t(plan.colReads.size()));
  // The schedule's tile along the reduced index when the comprehension
  // reduces itself (a nested reduction's is not in it: 32).
  int64_t step = red == op ? std::max<int64_t>(1, s.getTile().back()) : 32;
  // Static workgroup arrays: at most 48 KiB on CUDA (ptxas).
  int64_t budget =
      std::min<int64_t>(getTarget(op).getSharedPerBlock(), 48 * 1024);
  step = std::min(step, extentK);
  while (step > 1 && step * bytesPerStep > budget)
    step /= 2;
  if (step * bytesPerStep > budget) {
    plan.rowReads.clear();
    plan.colReads.clear();
    plan.vector = 1;
    return;
  }
  plan.step = step;
}

/// The staged reduction (planStaging): a loop over steps of plan.step along
/// the reduced index carrying `init`; per step the block stages its tiles
/// of plan.rowReads and plan.colReads in workgroup memory between two
/// barriers and `body` accumulates the step's indices in order, taking the
/// staged reads from the tiles. Returns the carriers.
FailureOr<SmallVector<Value>>
emitStagedLoop(OpBuilder &b, ComprehensionOp op, const TiledPlan &plan,
               BodyEmitter &emitter, ValueRange init, const IRMapping &base,
               Value tx, Value ty, Kernel &k,
               function_ref<scf::ValueVector(
                   OpBuilder &, Value, ValueRange,
                   function_ref<Value(ReadOp, int64_t, int64_t)>)>
                   body) {
  Location loc = op.getLoc();
  ComprehensionOp red = plan.red;
  Value kIndex = red.getIndex(red.getNumIndices() - 1);
  int64_t tileI = plan.threadsI * plan.pointsI,
          tileJ = plan.threadsJ * plan.pointsJ, step = plan.step;
  int64_t extentI = op.getExtent(plan.i), extentJ = op.getExtent(plan.j);
  int64_t threads = plan.threadsI * plan.threadsJ;
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  // One tile per staged read: [step][tile rows or columns + pad], f32.
  // The points read a step's row (consecutive threads, consecutive words,
  // or consecutive runs of v); the padding puts a step's consecutive
  // elements, which consecutive threads write when the read is contiguous
  // in the reduced index, in different banks (one word; v words with
  // vector loads: a row stays aligned, the writes 4-way at worst).
  llvm::DenseMap<Operation *, Value> tiles;
  auto addTile = [&](int64_t width) {
    Value tile = k.func.addWorkgroupAttribution(
        MemRefType::get({step, width + plan.pad()}, b.getF32Type(), AffineMap(),
                        wgSpace),
        loc);
    if (plan.vector > 1)
      k.func.setWorkgroupAttributionAttr(
          k.func.getNumWorkgroupAttributions() - 1,
          LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(16));
    return tile;
  };
  for (ReadOp read : plan.rowReads)
    tiles[read] = addTile(tileI);
  for (ReadOp read : plan.colReads)
    tiles[read] = addTile(tileJ);
  Value tid = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, ty, cst(plan.threadsJ)), tx);
  // The first row and column of the block's tile.
  Value rowBase = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), cst(tileI));
  Value colBase = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), cst(tileJ));

  int64_t extentK = red.getExtent(red.getNumIndices() - 1);
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(extentK), cst(step),
                                 SmallVector<Value>(init));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k0 = loop.getInductionVar();
  bool stageFailed = false;
  // Stage each tile: element e of `along` x step (e = tid + q threads);
  // consecutive threads along the read's contiguous coordinate (the
  // reduced index when its last coordinate uses it, else the tile's).
  auto stage = [&](ReadOp read, Value index, Value first, int64_t along,
                   int64_t extent) {
    Value tile = tiles.lookup(read);
    bool kFast = false;
    {
      SmallVector<Value> operands(read.getIndices());
      AffineExpr last = read.getMap().getResults().back();
      for (auto [d, v] : llvm::enumerate(operands))
        if (v == kIndex && last.isFunctionOfDim(d))
          kFast = true;
    }
    int64_t elements = along * step;
    // The thread's first element's coordinates; when the threads cover
    // whole rows of the tile (threads a multiple of its row), element
    // tid + q threads is q rows further: the same address plus a constant
    // (one address register per operand, not one per element).
    int64_t row = kFast ? step : along;
    Value a0, kk0;
    if (threads % row == 0) {
      a0 = kFast ? arith::DivUIOp::create(b, loc, tid, cst(step)).getResult()
                 : arith::RemUIOp::create(b, loc, tid, cst(along)).getResult();
      kk0 = kFast ? arith::RemUIOp::create(b, loc, tid, cst(step)).getResult()
                  : arith::DivUIOp::create(b, loc, tid, cst(along)).getResult();
    }
    for (int64_t q = 0; q * threads < elements; ++q) {
      Value e = arith::AddIOp::create(b, loc, tid, cst(q * threads));
      Value inside;
      if ((q + 1) * threads > elements)
        inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e,
                                       cst(elements));
      OpBuilder::InsertionGuard g(b);
      if (inside) {
        auto ifOp = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      }
      Value a, kk;
      if (a0 && kFast) {
        a = arith::AddIOp::create(b, loc, a0, cst(q * threads / step));
        kk = kk0;
      } else if (a0) {
        a = a0;
        kk = arith::AddIOp::create(b, loc, kk0, cst(q * threads / along));
      } else {
        a = kFast ? arith::DivUIOp::create(b, loc, e, cst(step)).getResult()
                  : arith::RemUIOp::create(b, loc, e, cst(along)).getResult();
        kk = kFast ? arith::RemUIOp::create(b, loc, e, cst(step)).getResult()
                   : arith::DivUIOp::create(b, loc, e, cst(along)).getResult();
      }
      Value at = arith::AddIOp::create(b, loc, first, a);
      if (extent % along)
        at = arith::MinUIOp::create(b, loc, at, cst(extent - 1));
      IRMapping m = base;
      m.map(index, at);
      Value kv = arith::AddIOp::create(b, loc, k0, kk);
      // The last step's elements past the extent read its last element
      // (and are not used).
      if (extentK % step)
        kv = arith::MinUIOp::create(b, loc, kv, cst(extentK - 1));
      m.map(kIndex, kv);
      if (failed(emitter.emit(b, read, m))) {
        stageFailed = true;
        return;
      }
      memref::StoreOp::create(b, loc, m.lookup(read.getResult()), tile,
                              ValueRange{kk, a});
    }
  };
  for (ReadOp read : plan.rowReads)
    stage(read, op.getIndex(plan.i), rowBase, tileI, extentI);
  for (ReadOp read : plan.colReads)
    stage(read, op.getIndex(plan.j), colBase, tileJ, extentJ);
  if (stageFailed)
    return failure();
  gpu::BarrierOp::create(b, loc);
  // The step's indices in order, the staged reads from the tiles.
  // The last step of an extent no multiple of the step is shorter.
  Value count = cst(step);
  if (extentK % step)
    count = arith::MinUIOp::create(
        b, loc, count, arith::SubIOp::create(b, loc, cst(extentK), k0));
  auto inner = scf::ForOp::create(b, loc, cst(0), count, cst(1),
                                  loop.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(inner.getBody());
    Value kk = inner.getInductionVar();
    Value kv = arith::AddIOp::create(b, loc, k0, kk);
    // The thread's r-th row of the tile is ty + r threadsI, its c-th
    // column tx + c threadsJ; with vectors ty R + r and tx C + c, each run
    // of v loaded once.
    llvm::DenseMap<std::pair<Operation *, int64_t>, Value> runs;
    auto fromTile = [&](ReadOp read, int64_t r, int64_t c) -> Value {
      Value tile = tiles.lookup(read);
      if (!tile)
        return Value();
      bool row = llvm::is_contained(plan.rowReads, read);
      int64_t v = plan.vector;
      if (v == 1) {
        Value local =
            row ? arith::AddIOp::create(b, loc, ty, cst(r * plan.threadsI))
                : arith::AddIOp::create(b, loc, tx, cst(c * plan.threadsJ));
        return memref::LoadOp::create(b, loc, tile, ValueRange{kk, local});
      }
      int64_t q = row ? r : c;
      Value &run = runs[{read.getOperation(), q / v}];
      if (!run) {
        Value local = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, row ? ty : tx,
                                  cst(row ? plan.pointsI : plan.pointsJ)),
            cst(q / v * v));
        run = vector::LoadOp::create(
            b, loc, VectorType::get({v}, b.getF32Type()), tile,
            ValueRange{kk, local}, /*nontemporal=*/false, llvm::Align(4 * v));
      }
      return vector::ExtractOp::create(b, loc, run, q % v);
    };
    scf::ValueVector next = body(b, kv, inner.getRegionIterArgs(), fromTile);
    scf::YieldOp::create(b, loc, next);
  }
  gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, inner.getResults());
  return SmallVector<Value>(loop.getResults());
}

LogicalResult emitTiledKernel(OpBuilder &b, ComprehensionOp op,
                              const TiledPlan &plan, IRMapping &tensors,
                              ValueRange outputs, Kernel &k) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(isLowPrecision(op));
  // Products and sums contract into fused multiply-adds (the inner loop's
  // instructions halved; one rounding for two, as nvcc's default).
  emitter.setContract(true);
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
  // The thread's first row and column, and the strides of its points.
  bool runs = plan.vector > 1;
  int64_t strideI = runs ? 1 : plan.threadsI,
          strideJ = runs ? 1 : plan.threadsJ;
  auto first = [&](Dimension d, int64_t tile, Value t, int64_t points) {
    Value offset =
        runs ? arith::MulIOp::create(b, loc, t, cst(points)).getResult() : t;
    return arith::AddIOp::create(
               b, loc,
               arith::MulIOp::create(b, loc, gpu::BlockIdOp::create(b, loc, d),
                                     cst(tile)),
               offset)
        .getResult();
  };
  Value i0 = first(Dimension::y, tileI, ty, plan.pointsI);
  Value j0 = first(Dimension::x, tileJ, tx, plan.pointsJ);
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
  auto along = [&](Value from, int64_t points, int64_t stride, int64_t extent,
                   int64_t tile, SmallVector<Value> &at,
                   SmallVector<Value> &in) {
    for (int64_t q = 0; q < points; ++q) {
      Value x =
          q ? arith::AddIOp::create(b, loc, from, cst(q * stride)).getResult()
            : from;
      at.push_back(x);
      in.push_back(
          extent % tile == 0
              ? x
              : arith::MinUIOp::create(b, loc, x, cst(extent - 1)).getResult());
    }
  };
  along(i0, plan.pointsI, strideI, extentI, tileI, rows, rowsIn);
  along(j0, plan.pointsJ, strideJ, extentJ, tileJ, cols, colsIn);
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
  // The summand of every point at the reduced indices `ivs`, accumulated
  // into `carried`; `staged` gives the staged reads' values at a point.
  bool bodyFailed = false;
  auto accumulate =
      [&](OpBuilder &lb, ValueRange ivs, ValueRange carried,
          function_ref<Value(ReadOp, int64_t r, int64_t c)> staged) {
        scf::ValueVector next;
        for (int64_t r = 0; r < plan.pointsI; ++r)
          for (int64_t c = 0; c < plan.pointsJ; ++c) {
            IRMapping m = pointMapping(r, c);
            for (auto [d, iv] : llvm::enumerate(ivs))
              m.map(red.getIndex(firstReduced + d), iv);
            ValueRange mine =
                carried.slice((r * plan.pointsJ + c) * width, width);
            bool ok = true;
            for (Operation &inner : red.getBodyBlock().without_terminator()) {
              auto read = dyn_cast<ReadOp>(&inner);
              if (Value v = read && staged ? staged(read, r, c) : Value()) {
                m.map(read.getResult(), v);
                continue;
              }
              ok &= succeeded(emitter.emit(lb, &inner, m));
            }
            if (!ok) {
              bodyFailed = true;
              llvm::append_range(next, mine);
              continue;
            }
            if (failed(emitter.materialize(red.getYield(), m))) {
              bodyFailed = true;
              llvm::append_range(next, mine);
              continue;
            }
            SmallVector<Value> yields =
                llvm::map_to_vector(red.getYield().getValues(),
                                    [&](Value v) { return m.lookup(v); });
            for (Value v : monoid->accumulate(lb, loc, mine, yields)) {
              if (Operation *def = v.getDefiningOp())
                allowContraction(def);
              next.push_back(v);
            }
          }
        return next;
      };
  SmallVector<Value> sumValues;
  if (plan.step) {
    FailureOr<SmallVector<Value>> staged = emitStagedLoop(
        b, op, plan, emitter, init, base, tx, ty, k,
        [&](OpBuilder &lb, Value kv, ValueRange carried,
            function_ref<Value(ReadOp, int64_t, int64_t)> fromTile) {
          return accumulate(lb, kv, carried, fromTile);
        });
    if (failed(staged))
      return failure();
    sumValues = std::move(*staged);
  } else {
    SmallVector<Value> lbs, ubs, steps;
    for (unsigned d = firstReduced; d < red.getNumIndices(); ++d) {
      lbs.push_back(cst(0));
      ubs.push_back(cst(red.getExtent(d)));
      steps.push_back(cst(1));
    }
    scf::LoopNest nest =
        scf::buildLoopNest(b, loc, lbs, ubs, steps, init,
                           [&](OpBuilder &lb, Location, ValueRange ivs,
                               ValueRange carried) -> scf::ValueVector {
                             return accumulate(lb, ivs, carried, nullptr);
                           });
    sumValues = nest.results;
  }
  if (bodyFailed)
    return failure();
  ValueRange sums = sumValues;

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
        if (failed(emitter.materialize(op.getYield(), m)))
          return failure();
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
    planStaging(r.op, *plan);
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
