//===- RowKernel.cpp - row and point kernels --------------------*- C++ -*-===//
//
// The kernels of every comprehension the tensor-core and matrix-unit
// patterns do not take:
//
//  * row kernels (a schedule whose last index is shared by the block's
//    threads and whose other indices are spread one per block): every
//    nested reduction that does not depend on the row index is computed
//    once per block, each thread striding the reduced index and the
//    partial carriers combined across the block (subgroup shuffles, then
//    workgroup memory); the row is then written by the threads, striding;
//  * matrix-vector kernels (a schedule with a warp per output of a
//    comprehension of the matrix-vector form, Tang/Analysis/ShapeClass.h):
//    the lanes stride the reductions with vector loads shared by the rows
//    of the batch, shuffles combine them, and the rest of the body (the
//    epilogue) runs on one lane per row;
//  * split row reductions (a schedule that spreads a long reduced row over
//    block_x: an argmax over a vocabulary, a sum of everything): blocks
//    reduce runs of the row into a scratch buffer, a second kernel combines
//    them;
//  * every other comprehension: one thread per parallel point, reductions
//    as loops in registers (correct for every monoid, not yet fast).
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "RowVectors.h"
#include "Tang/Analysis/ShapeClass.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// Whether `v`'s element type can travel through a 32-bit shuffle and the
/// f32 workgroup buffer (bitcast for i32).
bool isShuffleType(Type t) { return t.isF32() || t.isSignlessInteger(32); }

/// The values `op`'s regions use from outside `op`.
SmallVector<Value> getFreeValues(Operation *op) {
  llvm::SetVector<Value> free;
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value v : inner->getOperands())
      if (!op->isAncestor(v.getParentRegion()->getParentOp()))
        free.insert(v);
  });
  return free.takeVector();
}

/// Whether `op`'s row kernel has no row (isRowlessSchedule).
static bool isRowless(ComprehensionOp op) {
  return isRowlessSchedule(op, op.getScheduleAttr());
}

/// The threads of a row kernel for `op`, or 0 if its schedule does not ask
/// for one: the last index whole in the block and shared by a power-of-two
/// number (>= 32) of threads, every other parallel index one per block.
int64_t getRowKernelThreads(ComprehensionOp op) {
  ScheduleAttr s = op.getScheduleAttr();
  if (!s || op.getNumIndices() == 0)
    return 0;
  unsigned last = op.getNumIndices() - 1;
  int64_t t = s.getThreads()[last];
  if (t < (hasWarpShuffles(op) ? 32 : 1) || !llvm::isPowerOf2_64(t) ||
      t > 1024 || (s.getTile()[last] != op.getExtent(last) && !isRowless(op)))
    return 0;
  for (unsigned i = 0; i < op.getNumParallel() && i != last; ++i)
    if (s.getTile()[i] != 1 || s.getThreads()[i] != 1)
      return 0;
  for (unsigned i = op.getNumParallel(); i < last; ++i)
    if (s.getThreads()[i] != 1)
      return 0;
  // Every carrier combined across threads fits a 32-bit shuffle.
  auto carriersFit = [](ComprehensionOp c) {
    FailureOr<MonoidCodegen> m = MonoidCodegen::get(c);
    return succeeded(m) && llvm::all_of(m->getCarrierTypes(), isShuffleType) &&
           m->getCarrierTypes().size() <= 4;
  };
  if (op.getNumReduced() && !carriersFit(op))
    return 0;
  for (Operation &nested : op.getBodyBlock())
    if (auto c = dyn_cast<ComprehensionOp>(nested); c && !carriersFit(c))
      return 0;
  return t;
}

/// Combines each thread's `carrier` in workgroup memory alone, in thread
/// order: each thread's carrier to row tid of `buf` (threads x 4 x f32),
/// then log2(threads) steps, the step of stride s combining row t and row
/// t + s into row t for t a multiple of 2s (earlier threads' first), a
/// barrier after each; every thread reads row 0. For targets without a
/// known subgroup size (the portable backends).
SmallVector<Value> emitWorkgroupCombine(OpBuilder &b, Location loc,
                                        const MonoidCodegen &monoid,
                                        ValueRange carrier, Value tid,
                                        int64_t threads, Value buf,
                                        function_ref<Value(int64_t)> cst) {
  ArrayRef<Type> types = monoid.getCarrierTypes();
  auto load = [&](OpBuilder &ob, Value row) {
    SmallVector<Value> c;
    for (auto [k, t] : llvm::enumerate(types))
      c.push_back(carrierFromF32(
          ob, loc,
          memref::LoadOp::create(ob, loc, buf, ValueRange{row, cst(k)}), t));
    return c;
  };
  auto store = [&](OpBuilder &ob, ValueRange c, Value row) {
    for (auto [k, v] : llvm::enumerate(c))
      memref::StoreOp::create(ob, loc, carrierToF32(ob, loc, v), buf,
                              ValueRange{row, cst(k)});
  };
  if (threads == 1)
    return llvm::to_vector(carrier);
  // The buffer may still be read from a previous combine.
  gpu::BarrierOp::create(b, loc);
  store(b, carrier, tid);
  gpu::BarrierOp::create(b, loc);
  for (int64_t s = 1; s < threads; s *= 2) {
    Value mine = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, tid, cst(2 * s)), cst(0));
    auto step = scf::IfOp::create(b, loc, mine, /*withElse=*/false);
    OpBuilder tb = OpBuilder::atBlockBegin(&step.getThenRegion().front());
    SmallVector<Value> first = load(tb, tid);
    SmallVector<Value> second =
        load(tb, arith::AddIOp::create(tb, loc, tid, cst(s)));
    store(tb, monoid.combine(tb, loc, first, second), tid);
    gpu::BarrierOp::create(b, loc);
  }
  return load(b, cst(0));
}

/// Combines each thread's `carrier` across the block, in thread order;
/// every thread gets the block's carrier. Subgroup shuffles within warps
/// (emitWarpCombine), then one warp combines the warps' carriers through
/// workgroup memory `buf` (33 x 4 x f32): warp w's carrier goes to lane w
/// of the last combine. Together with emitPartialReduction's consecutive
/// runs this is the reduction in index order. On a target without 32-lane
/// warps, emitWorkgroupCombine (`buf` threads x 4).
SmallVector<Value> emitBlockCombine(OpBuilder &b, Location loc,
                                    const MonoidCodegen &monoid,
                                    ValueRange carrier, Value tid,
                                    int64_t threads, Value buf) {
  // Index constants are hoisted to the start of the kernel (the block of
  // `buf`, a workgroup attribution) so that they dominate every nested
  // region below.
  Block *entry = buf.getParentBlock();
  auto cst = [&](int64_t v) {
    OpBuilder eb = OpBuilder::atBlockBegin(entry);
    return arith::ConstantIndexOp::create(eb, loc, v).getResult();
  };
  if (!hasWarpShuffles(entry->getParentOp()))
    return emitWorkgroupCombine(b, loc, monoid, carrier, tid, threads, buf,
                                cst);
  auto warpReduce = [&](OpBuilder &ob, SmallVector<Value> c, Value lane) {
    return emitWarpCombine(ob, loc, monoid, std::move(c), lane);
  };
  ArrayRef<Type> types = monoid.getCarrierTypes();
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(32));
  SmallVector<Value> c = warpReduce(b, llvm::to_vector(carrier), lane);
  // One warp: the butterfly left every lane the block's carrier.
  if (threads == 32)
    return c;
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(32));
  Value zero = cst(0);
  Value laneZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  // The buffer may still be read from a previous combine.
  gpu::BarrierOp::create(b, loc);
  auto write = scf::IfOp::create(b, loc, laneZero, /*withElse=*/false);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&write.getThenRegion().front());
    for (auto [k, v] : llvm::enumerate(c))
      memref::StoreOp::create(tb, loc, carrierToF32(tb, loc, v), buf,
                              ValueRange{warp, cst(k)});
  }
  gpu::BarrierOp::create(b, loc);
  Value warpZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp, zero);
  auto first = scf::IfOp::create(b, loc, warpZero, /*withElse=*/false);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&first.getThenRegion().front());
    Value live = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ult, lane,
                                       cst(threads / 32));
    auto pick = scf::IfOp::create(tb, loc, TypeRange(types), live,
                                  /*withElse=*/true);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(&pick.getThenRegion().front());
      SmallVector<Value> loaded;
      for (auto [k, t] : llvm::enumerate(types))
        loaded.push_back(carrierFromF32(
            lb, loc,
            memref::LoadOp::create(lb, loc, buf, ValueRange{lane, cst(k)}), t));
      scf::YieldOp::create(lb, loc, loaded);
      OpBuilder eb = OpBuilder::atBlockBegin(&pick.getElseRegion().front());
      scf::YieldOp::create(eb, loc, monoid.identity(eb, loc));
    }
    SmallVector<Value> total =
        warpReduce(tb, SmallVector<Value>(pick.getResults()), lane);
    Value l0 =
        arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::eq, lane, zero);
    auto store = scf::IfOp::create(tb, loc, l0, /*withElse=*/false);
    OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
    for (auto [k, v] : llvm::enumerate(total))
      memref::StoreOp::create(sb, loc, carrierToF32(sb, loc, v), buf,
                              ValueRange{cst(32), cst(k)});
  }
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> out;
  for (auto [k, t] : llvm::enumerate(types))
    out.push_back(carrierFromF32(
        b, loc,
        memref::LoadOp::create(b, loc, buf, ValueRange{cst(32), cst(k)}), t));
  return out;
}

/// The vector width to use along `row` (of extent `extent`) given the
/// schedule's: a divisor of the extent.
int64_t getRowVector(ComprehensionOp op, int64_t extent) {
  int64_t v = op.getScheduleAttr() ? op.getScheduleAttr().getVector() : 1;
  while (v > 1 && extent % v != 0)
    v /= 2;
  return v;
}

/// Rows per block of a row kernel whose row is one warp's (`threads` 32):
/// 8 warps, a row each, when the rows are many and a multiple of 8 (a
/// block of one warp per row leaves most of a multiprocessor's block slots
/// the limit: attention's D = rowsum(dO O) over 128-wide rows).
int64_t getRowsPerBlock(int64_t rows, int64_t threads) {
  return threads == 32 && rows >= 4096 && rows % 8 == 0 ? 8 : 1;
}

/// A block per row (or, for rows of one warp, a warp per row and several
/// rows per block: getRowsPerBlock): the last index is covered by the
/// row's threads, striding it; the other parallel indices come from the
/// block id (and the warp). Body
/// operations that do not depend on the row (nor on the comprehension's
/// reduced indices) run first, once per block: nested reductions among them
/// are computed cooperatively (each thread a strided part, then a block
/// combine); the rest of the body runs per row element.
LogicalResult emitRowKernel(OpBuilder &b, ComprehensionOp op,
                            IRMapping &tensors, ValueRange outputs, Kernel &k,
                            int64_t threads) {
  Location loc = op.getLoc();
  unsigned last = op.getNumIndices() - 1;
  bool rowIsParallel = !op.isReducedIndex(last);
  // No row (isRowless): every index one per block, the body once per block
  // (its nested reductions shared by the threads), stored by thread 0.
  bool rowless = isRowless(op);
  int64_t blocks = 1;
  for (unsigned i = 0; i < op.getNumParallel(); ++i)
    if (i != last || rowless)
      blocks *= op.getExtent(i);
  if (blocks > std::numeric_limits<int32_t>::max())
    return op.emitOpError()
           << "has " << blocks << " rows, more than one launch covers";
  bool shuffles = hasWarpShuffles(op);
  int64_t rowsPerBlock = shuffles ? getRowsPerBlock(blocks, threads) : 1;
  k.grid = {blocks / rowsPerBlock, 1, 1};
  k.block = {threads * rowsPerBlock, 1, 1};

  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  // A warp's carrier per row and the total (emitBlockCombine), or every
  // thread's (emitWorkgroupCombine); declared by the first combine (a row
  // kernel that combines nothing, a map, has none).
  Value buf;
  auto getBuf = [&] {
    if (!buf)
      buf = k.func.addWorkgroupAttribution(
          MemRefType::get({shuffles ? 33 : threads, 4}, b.getF32Type(),
                          AffineMap(), wgSpace),
          loc);
    return buf;
  };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (rowsPerBlock > 1) {
    // Warp w of block b takes row b * rowsPerBlock + w; its lanes are the
    // row's threads (no block barrier: threads == 32 combines by shuffles).
    bid = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, bid, cst(rowsPerBlock)),
        arith::DivUIOp::create(b, loc, tid, cst(32)));
    tid = arith::RemUIOp::create(b, loc, tid, cst(32));
  }

  IRMapping mapping;
  SmallVector<Value> point(op.getNumParallel());
  Value rest = bid;
  for (int i = static_cast<int>(op.getNumParallel()) - 1; i >= 0; --i) {
    if (static_cast<unsigned>(i) == last && !rowless)
      continue;
    Value ext = cst(op.getExtent(i));
    point[i] = arith::RemUIOp::create(b, loc, rest, ext);
    rest = arith::DivUIOp::create(b, loc, rest, ext);
    mapping.map(op.getIndex(i), point[i]);
  }

  // Split the body: what does not depend on the row (or on any reduced
  // index of the comprehension) runs once per block.
  llvm::DenseSet<Value> dependent;
  for (unsigned i = 0; i < op.getNumIndices(); ++i)
    if ((i == last && !rowless) || op.isReducedIndex(i))
      dependent.insert(op.getIndex(i));
  SmallVector<Operation *> perBlock, perRow;
  for (Operation &inner : op.getBodyBlock().without_terminator()) {
    bool dep = llvm::any_of(inner.getOperands(),
                            [&](Value v) { return dependent.contains(v); }) ||
               llvm::any_of(getFreeValues(&inner),
                            [&](Value v) { return dependent.contains(v); });
    if (dep) {
      for (Value r : inner.getResults())
        dependent.insert(r);
      perRow.push_back(&inner);
    } else {
      perBlock.push_back(&inner);
    }
  }

  BodyEmitter emitter(tensors, &k.func.getBody().front());
  bool approximate = isLowPrecision(op);
  emitter.setApproximate(approximate);
  RowCache rowCache;
  for (Operation *inner : perBlock) {
    auto nested = dyn_cast<ComprehensionOp>(inner);
    if (!nested) {
      if (failed(emitter.emit(b, inner, mapping)))
        return failure();
      continue;
    }
    FailureOr<MonoidCodegen> mc = MonoidCodegen::get(nested);
    if (failed(mc))
      return failure();
    mc->setApproximate(approximate);
    FailureOr<SmallVector<Value>> partial;
    int64_t nv = getRowVector(op, nested.getExtent(0));
    if (nested.getNumReduced() == 1 && mc->isCommutative() &&
        (nv > 1 || hasVectorAccess(op))) {
      SmallVector<Operation *> ops =
          llvm::map_to_vector(nested.getBodyBlock().without_terminator(),
                              [](Operation &o) { return &o; });
      partial = emitVectorPartial(b, loc, nested, ops, nested.getIndex(0),
                                  nested.getExtent(0), *mc, tid, threads, nv,
                                  mapping, tensors, emitter, &rowCache,
                                  op.getScheduleAttr().getStages());
    } else {
      partial = emitter.emitPartialReduction(
          b, nested, mapping, *mc, tid, threads, [&](OpBuilder &ob) {
            return emitter.emitBody(ob, nested.getBodyBlock(), mapping);
          });
    }
    if (failed(partial))
      return failure();
    SmallVector<Value> total =
        emitBlockCombine(b, loc, *mc, *partial, tid, threads, getBuf());
    for (auto [r, v] :
         llvm::zip(nested.getResults(), mc->finalize(b, loc, total)))
      mapping.map(r, v);
  }

  auto emitPerRow = [&](OpBuilder &ob) -> LogicalResult {
    for (Operation *inner : perRow)
      if (failed(emitter.emit(ob, inner, mapping)))
        return failure();
    return success();
  };
  auto yields = [&]() {
    return llvm::map_to_vector(op.getYield().getValues(), [&](Value v) {
      return mapping.lookupOrDefault(v);
    });
  };
  auto store = [&](OpBuilder &ob, ValueRange values, ValueRange at) {
    for (auto [v, out] : llvm::zip(values, outputs)) {
      Type storage = cast<MemRefType>(out.getType()).getElementType();
      memref::StoreOp::create(ob, loc, toStorage(ob, loc, v, storage), out, at);
    }
  };

  if (rowless) {
    // The body ran once per block (perBlock); thread 0 stores the point.
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    store(tb, yields(), point);
    return success();
  }

  int64_t v = getRowVector(op, op.getExtent(last));
  if (rowIsParallel && v > 1 && op.getExtent(last) % (v * threads) == 0) {
    // Each thread writes `v` consecutive row elements per step: vector
    // loads of the reads along the row, one vector store per result.
    bool failedRow = false;
    Value start = arith::MulIOp::create(b, loc, tid, cst(v));
    int64_t trips = op.getExtent(last) / (threads * v);
    auto step = [&](OpBuilder &ob, Value base, RowCache *cache,
                    int64_t iteration) {
      SmallVector<SmallVector<Value>> perResult(op.getNumResults());
      if (failed(emitUnrolled(
              ob, loc, perRow, op.getIndex(last), base, v, mapping, tensors,
              emitter,
              [&](OpBuilder &eb, int64_t) {
                for (auto [k, y] : llvm::enumerate(yields())) {
                  Type st =
                      cast<MemRefType>(outputs[k].getType()).getElementType();
                  perResult[k].push_back(toStorage(eb, loc, y, st));
                }
              },
              cache, iteration))) {
        failedRow = true;
      } else {
        SmallVector<Value> at(point);
        at[last] = base;
        for (auto [k, elems] : llvm::enumerate(perResult)) {
          Type st = elems.front().getType();
          Value vec = vector::FromElementsOp::create(
              ob, loc, VectorType::get({v}, st), elems);
          int64_t bytes =
              v * std::max<int64_t>(1, st.getIntOrFloatBitWidth() / 8);
          vector::StoreOp::create(
              ob, loc, vec, outputs[k], at, /*nontemporal=*/false,
              llvm::MaybeAlign(bytes <= 16 && llvm::isPowerOf2_64(bytes) ? bytes
                                                                         : 0));
        }
      }
    };
    if (trips <= kMaxRowTrips) {
      // Unrolled, reusing the row's vectors loaded by the reductions.
      for (int64_t it = 0; it < trips; ++it)
        step(b, arith::AddIOp::create(b, loc, start, cst(it * threads * v)),
             &rowCache, it);
      return failure(failedRow);
    }
    scf::ForOp::create(b, loc, start, cst(op.getExtent(last)), cst(threads * v),
                       ValueRange{},
                       [&](OpBuilder &ob, Location, Value base, ValueRange) {
                         step(ob, base, nullptr, -1);
                         scf::YieldOp::create(ob, loc);
                       });
    return failure(failedRow);
  }

  if (rowIsParallel) {
    // Each thread writes the row elements it strides.
    bool failedRow = false;
    scf::ForOp::create(b, loc, tid, cst(op.getExtent(last)), cst(threads),
                       ValueRange{},
                       [&](OpBuilder &ob, Location, Value iv, ValueRange) {
                         mapping.map(op.getIndex(last), iv);
                         if (failed(emitPerRow(ob))) {
                           failedRow = true;
                         } else {
                           SmallVector<Value> at(point);
                           at[last] = iv;
                           store(ob, yields(), at);
                         }
                         scf::YieldOp::create(ob, loc);
                       });
    return failure(failedRow);
  }

  // The comprehension reduces along the row: a strided partial per thread,
  // combined across the block, stored by thread 0.
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(op);
  if (failed(mc))
    return failure();
  mc->setApproximate(approximate);
  FailureOr<SmallVector<Value>> partial;
  if (op.getNumReduced() == 1 && v > 1 && mc->isCommutative())
    partial = emitVectorPartial(b, loc, op, perRow, op.getIndex(last),
                                op.getExtent(last), *mc, tid, threads, v,
                                mapping, tensors, emitter, &rowCache,
                                op.getScheduleAttr().getStages());
  else
    partial = emitter.emitPartialReduction(b, op, mapping, *mc, tid, threads,
                                           emitPerRow);
  if (failed(partial))
    return failure();
  SmallVector<Value> total =
      emitBlockCombine(b, loc, *mc, *partial, tid, threads, getBuf());
  SmallVector<Value> results = mc->finalize(b, loc, total);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
  store(tb, results, point);
  return success();
}

/// A matrix-vector kernel's plan, read off the schedule of a comprehension
/// of the matrix-vector form (isMatVecForm): a warp per output `n` (the
/// last parallel index), `warps` consecutive outputs per block along
/// block_x; the other parallel indices (the rows of the batch) whole in the
/// warp (`serialRows`: each weight vector loaded once serves them all) or
/// one per block along block_y and block_z (`gridY`, `gridZ`); the lanes
/// stride the reductions `vector` elements at a time.
struct MatVecPlan {
  unsigned n;
  int64_t warps;
  SmallVector<unsigned> serialRows;
  std::optional<unsigned> gridY, gridZ;
  SmallVector<ComprehensionOp> reductions;
  int64_t vector;
};

/// The rows of the batch a warp computes at most (their carriers live in
/// registers).
constexpr int64_t kMaxSerialRows = 16;

/// The plan of `op`'s matrix-vector schedule, if it has one: tile[n] =
/// warps, mapped to block_x; threads[n] = 32 x warps (a warp per output,
/// its lanes striding the body's reductions) or, when `op` reduces itself,
/// threads[n] = warps and 32 threads along the reduced index, whole; every
/// other parallel index whole and serial, or tiled by one over block_y or
/// block_z.
std::optional<MatVecPlan> getMatVecPlan(ComprehensionOp op) {
  ScheduleAttr s = op.getScheduleAttr();
  if (!s || !hasWarpShuffles(op) ||
      (s.getKernel() != KernelKind::Auto &&
       s.getKernel() != KernelKind::Simt) ||
      !isMatVecForm(op))
    return std::nullopt;
  MatVecPlan plan;
  plan.n = op.getNumParallel() - 1;
  ArrayRef<int64_t> tile = s.getTile(), threads = s.getThreads();
  ArrayRef<Mapping> mapping = s.getMapping();
  plan.warps = tile[plan.n];
  if (mapping[plan.n] != Mapping::BlockX || plan.warps < 1 || plan.warps > 32)
    return std::nullopt;
  if (op.getNumReduced()) {
    unsigned k = plan.n + 1;
    if (threads[plan.n] != plan.warps || threads[k] != 32 ||
        tile[k] != op.getExtent(k))
      return std::nullopt;
    plan.reductions.push_back(op);
  } else {
    if (threads[plan.n] != 32 * plan.warps)
      return std::nullopt;
    for (Operation &inner : op.getBodyBlock())
      if (auto red = dyn_cast<ComprehensionOp>(inner))
        plan.reductions.push_back(red);
  }
  int64_t serial = 1;
  for (unsigned i = 0; i < plan.n; ++i) {
    if (threads[i] != 1)
      return std::nullopt;
    if (mapping[i] == Mapping::Serial && tile[i] == op.getExtent(i)) {
      plan.serialRows.push_back(i);
      serial *= op.getExtent(i);
    } else if (tile[i] == 1 && mapping[i] == Mapping::BlockY) {
      plan.gridY = i;
    } else if (tile[i] == 1 && mapping[i] == Mapping::BlockZ && !plan.gridZ) {
      plan.gridZ = i;
    } else {
      return std::nullopt;
    }
  }
  for (std::optional<unsigned> g : {plan.gridY, plan.gridZ})
    if (g && op.getExtent(*g) > 65535)
      return std::nullopt;
  if (serial > kMaxSerialRows)
    return std::nullopt;
  plan.vector = std::max<int64_t>(1, s.getVector());
  for (ComprehensionOp red : plan.reductions)
    while (plan.vector > 1 &&
           red.getExtent(red.getNumIndices() - 1) % plan.vector != 0)
      plan.vector /= 2;
  return plan;
}

/// A warp per output of a matrix-vector comprehension (getMatVecPlan):
/// each lane accumulates a strided part of every reduction for every row
/// of the batch, 16 bytes at a time (the loads of one step shared by the
/// reductions and rows that read the same elements), the lanes' carriers
/// are combined by shuffles, and the rest of the body (the epilogue: a
/// residual, an activation) runs for row r on lane r mod 32, which stores
/// it.
LogicalResult emitMatVecKernel(OpBuilder &b, ComprehensionOp op,
                               const MatVecPlan &plan, IRMapping &tensors,
                               ValueRange outputs, Kernel &k) {
  // The kernel's return goes after the guard below, at `b`'s point.
  OpBuilder::InsertionGuard insertion(b);
  Location loc = op.getLoc();
  Block *entry = &k.func.getBody().front();
  auto cst = [&](int64_t v) {
    OpBuilder eb = OpBuilder::atBlockBegin(entry);
    return arith::ConstantIndexOp::create(eb, loc, v).getResult();
  };
  BodyEmitter emitter(tensors, entry);
  bool approximate = isLowPrecision(op);
  emitter.setApproximate(approximate);
  emitter.setSizes(k.sizes);
  // A symbolic output extent (a context length): a fixed grid, as many
  // threads as the point kernels' (KernelSizes::getGridBlocks), whose
  // warps stride the outputs.
  bool strided = op.isSymbolicExtent(plan.n);
  if (strided && !k.sizes)
    return op.emitOpError() << "has a symbolic output extent but its kernel "
                               "has no sizes";
  int64_t extentN = strided ? 0 : op.getExtent(plan.n);
  int64_t gridY = plan.gridY ? op.getExtent(*plan.gridY) : 1;
  int64_t gridZ = plan.gridZ ? op.getExtent(*plan.gridZ) : 1;
  int64_t gridX =
      strided ? std::max<int64_t>(1, k.sizes->getGridBlocks() * 256 /
                                         (32 * plan.warps) / (gridY * gridZ))
              : static_cast<int64_t>(llvm::divideCeil(extentN, plan.warps));
  k.grid = {gridX, gridY, gridZ};
  k.block = {32 * plan.warps, 1, 1};

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(32));
  Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value out = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bx, cst(plan.warps)), warp);
  if (strided) {
    Value n = emitter.getExtent(b, loc, op, plan.n);
    auto loop = scf::ForOp::create(b, loc, out, n, cst(gridX * plan.warps));
    b.setInsertionPointToStart(loop.getBody());
    out = loop.getInductionVar();
  }
  IRMapping mapping;
  mapping.map(op.getIndex(plan.n), out);
  SmallVector<Value> point(op.getNumParallel());
  point[plan.n] = out;
  for (auto [g, dim] : {std::pair(plan.gridY, gpu::Dimension::y),
                        std::pair(plan.gridZ, gpu::Dimension::z)}) {
    if (!g)
      continue;
    point[*g] = gpu::BlockIdOp::create(b, loc, dim);
    mapping.map(op.getIndex(*g), point[*g]);
  }
  // A partial last block: its warps past the end do nothing (no barrier
  // follows: the warps never wait for each other).
  if (!strided && extentN % plan.warps) {
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, out,
                                         cst(extentN));
    auto guard = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
  }

  // The rows of the batch: every point of the serial indices, row-major,
  // as constants (one value per row, so that the loads of one row are
  // shared and those of different rows are not).
  SmallVector<SmallVector<Value>> rows{{}};
  for (unsigned i : plan.serialRows) {
    SmallVector<SmallVector<Value>> next;
    for (const SmallVector<Value> &r : rows)
      for (int64_t e = 0; e < op.getExtent(i); ++e) {
        SmallVector<Value> more(r);
        more.push_back(cst(e));
        next.push_back(std::move(more));
      }
    rows = std::move(next);
  }
  auto mapRow = [&](unsigned r) {
    for (auto [i, v] : llvm::zip(plan.serialRows, rows[r])) {
      mapping.map(op.getIndex(i), v);
      point[i] = v;
    }
  };

  SmallVector<MonoidCodegen> monoids;
  for (ComprehensionOp red : plan.reductions) {
    FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
    if (failed(mc))
      return failure();
    mc->setApproximate(approximate);
    monoids.push_back(*mc);
  }

  // The reductions, grouped by extent: one loop per group, the lanes
  // striding it `v` elements at a time, U steps per trip.
  int64_t v = plan.vector;
  // carriers[r][j]: row r's carrier of reduction j.
  SmallVector<SmallVector<SmallVector<Value>>> carriers(
      rows.size(), SmallVector<SmallVector<Value>>(plan.reductions.size()));
  SmallVector<ComprehensionOp> reductions(plan.reductions);
  auto reducedExtent = [&](unsigned j) {
    return reductions[j].getExtent(reductions[j].getNumIndices() - 1);
  };
  SmallVector<bool> done(reductions.size(), false);
  for (unsigned first = 0; first < reductions.size(); ++first) {
    if (done[first])
      continue;
    int64_t extent = reducedExtent(first);
    SmallVector<unsigned> group;
    for (unsigned j = first; j < reductions.size(); ++j)
      if (!done[j] && reducedExtent(j) == extent) {
        group.push_back(j);
        done[j] = true;
      }
    int64_t chunk = 32 * v, unroll = 1;
    for (int64_t u : {4, 2})
      if (extent % (chunk * u) == 0) {
        unroll = u;
        break;
      }
    SmallVector<Value> init;
    for (size_t r = 0; r < rows.size(); ++r)
      for (unsigned j : group)
        llvm::append_range(init, monoids[j].identity(b, loc));
    Value start = arith::MulIOp::create(b, loc, lane, cst(v));
    bool failedBody = false;
    auto loop = scf::ForOp::create(
        b, loc, start, cst(extent), cst(chunk * unroll), init,
        [&](OpBuilder &ob, Location, Value base, ValueRange iter) {
          // Carriers in loop order: row, then reduction of the group.
          SmallVector<SmallVector<Value>> cur;
          unsigned at = 0;
          for (size_t r = 0; r < rows.size(); ++r)
            for (unsigned j : group) {
              size_t width = monoids[j].getCarrierTypes().size();
              cur.push_back(SmallVector<Value>(iter.slice(at, width)));
              at += width;
            }
          RowCache cache;
          for (int64_t u = 0; u < unroll; ++u) {
            Value step =
                u == 0 ? base
                       : arith::AddIOp::create(
                             ob, loc, base,
                             arith::ConstantIndexOp::create(ob, loc, u * chunk))
                             .getResult();
            unsigned next = 0;
            for (size_t r = 0; r < rows.size(); ++r) {
              mapRow(r);
              for (unsigned j : group) {
                ComprehensionOp red = reductions[j];
                SmallVector<Operation *> ops =
                    llvm::map_to_vector(red.getBodyBlock().without_terminator(),
                                        [](Operation &o) { return &o; });
                SmallVector<Value> &carrier = cur[next++];
                if (failed(emitUnrolled(
                        ob, loc, ops, red.getIndex(red.getNumIndices() - 1),
                        step, v, mapping, tensors, emitter,
                        [&](OpBuilder &eb, int64_t) {
                          SmallVector<Value> yields = llvm::map_to_vector(
                              red.getYield().getValues(), [&](Value y) {
                                return mapping.lookupOrDefault(y);
                              });
                          carrier =
                              monoids[j].accumulate(eb, loc, carrier, yields);
                        },
                        &cache, u)))
                  failedBody = true;
              }
            }
          }
          SmallVector<Value> yielded;
          for (ArrayRef<Value> c : cur)
            llvm::append_range(yielded, c);
          scf::YieldOp::create(ob, loc, yielded);
        });
    if (failedBody)
      return failure();
    unsigned at = 0;
    for (size_t r = 0; r < rows.size(); ++r)
      for (unsigned j : group) {
        size_t width = monoids[j].getCarrierTypes().size();
        carriers[r][j] = emitWarpCombine(
            b, loc, monoids[j],
            SmallVector<Value>(loop.getResults().slice(at, width)), lane);
        at += width;
      }
  }

  // The epilogue of row r on lane r mod 32.
  for (size_t r = 0; r < rows.size(); ++r) {
    Value mine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                       cst(static_cast<int64_t>(r % 32)));
    auto ifOp = scf::IfOp::create(b, loc, mine, /*withElse=*/false);
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    mapRow(r);
    SmallVector<Value> results;
    for (auto [j, red] : llvm::enumerate(reductions)) {
      SmallVector<Value> total = monoids[j].finalize(tb, loc, carriers[r][j]);
      if (red == op) {
        results = total;
        continue;
      }
      for (auto [res, val] : llvm::zip(red.getResults(), total))
        mapping.map(res, val);
    }
    if (!op.getNumReduced()) {
      for (Operation &inner : op.getBodyBlock().without_terminator())
        if (!isa<ComprehensionOp>(inner) &&
            failed(emitter.emit(tb, &inner, mapping)))
          return failure();
      results = llvm::map_to_vector(op.getYield().getValues(), [&](Value y) {
        return mapping.lookupOrDefault(y);
      });
    }
    for (auto [val, o] : llvm::zip(results, outputs)) {
      Type storage = cast<MemRefType>(o.getType()).getElementType();
      SmallVector<Value> at(point);
      if (k.sizes)
        at = k.sizes->getIndices(tb, loc, o, point);
      memref::StoreOp::create(tb, loc, toStorage(tb, loc, val, storage), o, at);
    }
  }
  return success();
}

/// The elements per block and threads of a split row reduction, when
/// `op`'s schedule asks for one: one reduced index (the last) whose tile,
/// shorter than its extent, goes over block_x, shared by a power-of-two
/// number (>= 32) of threads; at most one parallel index, tiled by one
/// (over block_y); no nested reductions; carriers that fit 32 bits.
struct SplitRowPlan {
  int64_t chunk, threads, splits, rows;
};

std::optional<SplitRowPlan> getSplitRowPlan(ComprehensionOp op) {
  ScheduleAttr s = op.getScheduleAttr();
  unsigned np = op.getNumParallel();
  if (!s || op.getNumReduced() != 1 || np > 1 || !hasWarpShuffles(op) ||
      (s.getKernel() != KernelKind::Auto && s.getKernel() != KernelKind::Simt))
    return std::nullopt;
  int64_t chunk = s.getTile()[np], threads = s.getThreads()[np];
  int64_t extent = op.getExtent(np);
  if (s.getMapping()[np] != Mapping::BlockX || chunk >= extent ||
      threads < 32 || threads > 1024 || !llvm::isPowerOf2_64(threads) ||
      (np && (s.getTile()[0] != 1 || s.getThreads()[0] != 1)))
    return std::nullopt;
  bool nested = false;
  op.getBodyBlock().walk([&](ComprehensionOp) { nested = true; });
  FailureOr<MonoidCodegen> m = MonoidCodegen::get(op);
  if (nested || failed(m) || !m->isCommutative() ||
      !llvm::all_of(m->getCarrierTypes(), isShuffleType) ||
      m->getCarrierTypes().size() > 4)
    return std::nullopt;
  int64_t rows = np ? op.getExtent(0) : 1;
  if (rows > 65535)
    return std::nullopt;
  return SplitRowPlan{chunk, threads,
                      static_cast<int64_t>(llvm::divideCeil(extent, chunk)),
                      rows};
}

/// A split row reduction (getSplitRowPlan) in two kernels: block (s, r)
/// reduces elements [s * chunk, (s + 1) * chunk) of row r, its threads
/// striding them and their carriers combined across the block, into a
/// scratch buffer [rows, splits, carrier]; then a thread per row combines
/// its splits' carriers in order and stores the results.
LogicalResult emitSplitRowKernel(KernelRequest &r, const SplitRowPlan &plan) {
  ComprehensionOp op = r.op;
  Location loc = op.getLoc();
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(op);
  if (failed(mc))
    return failure();
  ArrayRef<Type> types = mc->getCarrierTypes();
  int64_t width = static_cast<int64_t>(types.size());
  OpBuilder &b = r.b;
  Value scratch = r.addScratch(
      MemRefType::get({plan.rows, plan.splits, width}, b.getF32Type()));
  unsigned scratchArg = cast<BlockArgument>(scratch).getArgNumber();
  SmallVector<unsigned> outArgs = llvm::map_to_vector(
      r.outputs, [](Value o) { return cast<BlockArgument>(o).getArgNumber(); });
  Kernel &combine = r.addFollowUp();
  auto cst = [&](OpBuilder &ob, int64_t v) {
    return arith::ConstantIndexOp::create(ob, loc, v).getResult();
  };
  unsigned np = op.getNumParallel();

  // The partial kernel.
  Kernel &k = r.k;
  k.grid = {plan.splits, plan.rows, 1};
  k.block = {plan.threads, 1, 1};
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value buf = k.func.addWorkgroupAttribution(
      MemRefType::get({33, 4}, b.getF32Type(), AffineMap(), wgSpace), loc);
  BodyEmitter emitter(r.tensors, &k.func.getBody().front());
  emitter.setSizes(k.sizes);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  IRMapping mapping;
  if (np)
    mapping.map(op.getIndex(0), row);
  Value start = arith::MulIOp::create(b, loc, split, cst(b, plan.chunk));
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, start, cst(b, plan.chunk)),
      cst(b, op.getExtent(np)));
  FailureOr<SmallVector<Value>> partial = emitter.emitStridedReduction(
      b, op, mapping, *mc, arith::AddIOp::create(b, loc, start, tid), end,
      cst(b, plan.threads));
  if (failed(partial))
    return failure();
  SmallVector<Value> total =
      emitBlockCombine(b, loc, *mc, *partial, tid, plan.threads, buf);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(b, 0));
  auto store = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  {
    OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
    for (auto [e, v] : llvm::enumerate(total))
      memref::StoreOp::create(
          sb, loc, carrierToF32(sb, loc, v), scratch,
          ValueRange{row, split, cst(sb, static_cast<int64_t>(e))});
  }

  // The combining kernel: a thread per row.
  Block &entry = combine.func.getBody().front();
  OpBuilder cb = OpBuilder::atBlockEnd(&entry);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(cb, op, {plan.rows}, combine);
  if (failed(point))
    return failure();
  Value cs = entry.getArgument(scratchArg);
  auto splits = scf::ForOp::create(cb, loc, cst(cb, 0), cst(cb, plan.splits),
                                   cst(cb, 1), mc->identity(cb, loc));
  {
    OpBuilder lb = OpBuilder::atBlockBegin(splits.getBody());
    SmallVector<Value> part;
    for (auto [e, t] : llvm::enumerate(types))
      part.push_back(
          carrierFromF32(lb, loc,
                         memref::LoadOp::create(
                             lb, loc, cs,
                             ValueRange{(*point)[0], splits.getInductionVar(),
                                        cst(lb, static_cast<int64_t>(e))}),
                         t));
    scf::YieldOp::create(
        lb, loc, mc->combine(lb, loc, splits.getRegionIterArgs(), part));
  }
  SmallVector<Value> results = mc->finalize(cb, loc, splits.getResults());
  for (auto [v, argNo] : llvm::zip(results, outArgs)) {
    Value out = entry.getArgument(argNo);
    SmallVector<Value> at;
    if (np)
      at.push_back((*point)[0]);
    if (combine.sizes)
      at = combine.sizes->getIndices(cb, loc, out, at);
    Type storage = cast<MemRefType>(out.getType()).getElementType();
    memref::StoreOp::create(cb, loc, toStorage(cb, loc, v, storage), out, at);
  }
  return success();
}

/// One thread per parallel point: the linear thread id is decomposed into
/// the parallel indices (row-major), reductions run as loops.
LogicalResult emitPointKernel(OpBuilder &b, ComprehensionOp op,
                              IRMapping &tensors, ValueRange outputs,
                              Kernel &k) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(isLowPrecision(op));
  emitter.setSizes(k.sizes);
  // Extents known when the kernel runs: a grid stride over the points.
  FailureOr<SmallVector<Value>> point;
  if (k.sizes) {
    SmallVector<Value> extents;
    for (unsigned i = 0; i < op.getNumParallel(); ++i)
      extents.push_back(emitter.getExtent(b, loc, op, i));
    point = emitGridStridePoints(b, loc, extents, k);
  } else {
    point = emitThreadPerPoint(b, op, op.getParallelExtents(), k);
  }
  if (failed(point))
    return failure();
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(*point))
    mapping.map(op.getIndex(i), v);
  FailureOr<SmallVector<Value>> results =
      emitter.emitSerialReduction(b, op, mapping);
  if (failed(results))
    return failure();
  for (auto [v, out] : llvm::zip(*results, outputs)) {
    Type storage = cast<MemRefType>(out.getType()).getElementType();
    SmallVector<Value> at(*point);
    if (k.sizes)
      at = k.sizes->getIndices(b, loc, out, *point);
    memref::StoreOp::create(b, loc, toStorage(b, loc, v, storage), out, at);
  }
  return success();
}

/// A map whose schedule moves `vector` > 1 elements at a time along its last
/// index (the pointwise schedule: 16-byte vectors): a thread per `v`
/// consecutive points of the last index, its reads along that index loaded
/// as vectors (emitUnrolled: predicated where a select takes them, shared
/// by the v evaluations) and each result stored as one vector. None when
/// the schedule, the extents or the result types do not allow it.
std::optional<int64_t> getPointVectorWidth(ComprehensionOp op,
                                           const Kernel &k) {
  ScheduleAttr s = op.getScheduleAttr();
  unsigned np = op.getNumParallel();
  if (!s || k.sizes || np == 0 || op.getNumReduced() ||
      (s.getKernel() != KernelKind::Auto &&
       s.getKernel() != KernelKind::Simt) ||
      hasSymbolicSizes(op))
    return std::nullopt;
  int64_t v = s.getVector();
  if (v < 2 || op.getExtent(np - 1) % v != 0)
    return std::nullopt;
  for (Type t : op.getResultTypes()) {
    Type e = cast<RankedTensorType>(t).getElementType();
    if (!e.isIntOrFloat() || e.getIntOrFloatBitWidth() < 8)
      return std::nullopt;
  }
  return v;
}

LogicalResult emitPointVectorKernel(OpBuilder &b, ComprehensionOp op, int64_t v,
                                    IRMapping &tensors, ValueRange outputs,
                                    Kernel &k) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(isLowPrecision(op));
  unsigned last = op.getNumParallel() - 1;
  SmallVector<int64_t> extents(op.getParallelExtents());
  extents[last] /= v;
  FailureOr<SmallVector<Value>> point = emitThreadPerPoint(b, op, extents, k);
  if (failed(point))
    return failure();
  IRMapping mapping;
  for (auto [i, x] : llvm::enumerate(*point))
    if (i != last)
      mapping.map(op.getIndex(i), x);
  Value base = arith::MulIOp::create(b, loc, (*point)[last],
                                     arith::ConstantIndexOp::create(b, loc, v));
  SmallVector<Operation *> ops = llvm::map_to_vector(
      op.getBodyBlock().without_terminator(), [](Operation &o) { return &o; });
  // results[r][e]: result r at point base + e.
  SmallVector<SmallVector<Value>> results(op.getNumResults());
  if (failed(emitUnrolled(b, loc, ops, op.getIndex(last), base, v, mapping,
                          tensors, emitter, [&](OpBuilder &, int64_t) {
                            for (auto [r, y] :
                                 llvm::enumerate(op.getYield().getValues()))
                              results[r].push_back(mapping.lookupOrDefault(y));
                          })))
    return failure();
  SmallVector<Value> at(*point);
  at[last] = base;
  for (auto [vals, out] : llvm::zip(results, outputs)) {
    Type storage = cast<MemRefType>(out.getType()).getElementType();
    SmallVector<Value> stored = llvm::map_to_vector(
        vals, [&](Value x) { return toStorage(b, loc, x, storage); });
    Value vec = vector::FromElementsOp::create(
        b, loc, VectorType::get({v}, storage), stored);
    int64_t bytes = v * storage.getIntOrFloatBitWidth() / 8;
    // At a multiple of v along rows of a multiple of v elements, in a
    // 16-byte aligned buffer (the runtimes check).
    vector::StoreOp::create(b, loc, vec, out, at, /*nontemporal=*/false,
                            llvm::MaybeAlign(llvm::isPowerOf2_64(bytes)
                                                 ? std::min<int64_t>(bytes, 16)
                                                 : 0));
  }
  return success();
}

/// A block per row, when the schedule shares the last index among a block's
/// threads (getRowKernelThreads).
struct RowKernelPattern : KernelPattern {
  RowKernelPattern() : KernelPattern("row") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    int64_t threads = getRowKernelThreads(r.op);
    if (!threads)
      return notifyMatchFailure(r.op, "no row schedule");
    return succeeded(
               emitRowKernel(r.b, r.op, r.tensors, r.outputs, r.k, threads))
               ? KernelMatch::Built
               : KernelMatch::Error;
  }
};

/// A warp per output, when the schedule asks for a matrix-vector kernel
/// (getMatVecPlan).
struct MatVecKernelPattern : KernelPattern {
  MatVecKernelPattern() : KernelPattern("matvec") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    std::optional<MatVecPlan> plan = getMatVecPlan(r.op);
    if (!plan)
      return notifyMatchFailure(r.op, "no matrix-vector schedule");
    return succeeded(
               emitMatVecKernel(r.b, r.op, *plan, r.tensors, r.outputs, r.k))
               ? KernelMatch::Built
               : KernelMatch::Error;
  }
};

/// A long row split among blocks, when the schedule asks for it
/// (getSplitRowPlan).
struct SplitRowKernelPattern : KernelPattern {
  SplitRowKernelPattern() : KernelPattern("split_row") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    std::optional<SplitRowPlan> plan = getSplitRowPlan(r.op);
    if (!plan)
      return notifyMatchFailure(r.op, "no split row schedule");
    return succeeded(emitSplitRowKernel(r, *plan)) ? KernelMatch::Built
                                                   : KernelMatch::Error;
  }
};

/// A thread per parallel point: every comprehension.
struct PointKernelPattern : KernelPattern {
  PointKernelPattern() : KernelPattern("point") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (std::optional<int64_t> v = getPointVectorWidth(r.op, r.k))
      return succeeded(emitPointVectorKernel(r.b, r.op, *v, r.tensors,
                                             r.outputs, r.k))
                 ? KernelMatch::Built
                 : KernelMatch::Error;
    return succeeded(emitPointKernel(r.b, r.op, r.tensors, r.outputs, r.k))
               ? KernelMatch::Built
               : KernelMatch::Error;
  }
};

} // namespace

void mlir::tang::populateRowKernelPatterns(KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<MatVecKernelPattern>());
  patterns.push_back(std::make_unique<RowKernelPattern>());
  patterns.push_back(std::make_unique<SplitRowKernelPattern>());
  patterns.push_back(std::make_unique<PointKernelPattern>());
}
