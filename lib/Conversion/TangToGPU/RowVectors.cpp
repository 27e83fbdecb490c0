//===- RowVectors.cpp - vector loads along a row ----------------*- C++ -*-===//
//
// Body operations emitted for runs of a row index with the reads along it
// loaded as vectors, the per-thread partial reductions built on them, and
// the warp combine (RowVectors.h).
//
//===----------------------------------------------------------------------===//

#include "RowVectors.h"
#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

/// Combines each lane's `carrier` across its warp (32 lanes), or across
/// each aligned group of `width` lanes; every lane gets its group's
/// carrier. The butterfly runs from the nearest partner out (offsets 1, 2,
/// ..., width / 2): after the step of offset o, every lane holds
/// the combination of its aligned group of 2o lanes. For a monoid that is
/// not commutative the lane whose bit o is set puts its partner's carrier
/// (the earlier lanes') first, so each group is combined in lane order.
SmallVector<Value> mlir::tang::emitWarpCombine(OpBuilder &b, Location loc,
                                               const MonoidCodegen &monoid,
                                               SmallVector<Value> c, Value lane,
                                               int32_t width) {
  bool ordered = !monoid.isCommutative();
  for (int32_t off = 1; off < width; off *= 2) {
    SmallVector<Value> other;
    for (Value v : c)
      other.push_back(
          gpu::ShuffleOp::create(b, loc, v, off, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult());
    if (!ordered) {
      c = monoid.combine(b, loc, c, other);
      continue;
    }
    Value bit = arith::AndIOp::create(
        b, loc, lane, arith::ConstantIndexOp::create(b, loc, off));
    Value later =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bit,
                              arith::ConstantIndexOp::create(b, loc, 0));
    SmallVector<Value> first, second;
    for (auto [mine, theirs] : llvm::zip(c, other)) {
      first.push_back(arith::SelectOp::create(b, loc, later, theirs, mine));
      second.push_back(arith::SelectOp::create(b, loc, later, mine, theirs));
    }
    c = monoid.combine(b, loc, first, second);
  }
  return c;
}

Value mlir::tang::emitVectorLoad(OpBuilder &b, Location loc, ReadOp read,
                                 Value row, Value base, int64_t v,
                                 const IRMapping &mapping, IRMapping &tensors) {
  SmallVector<Value> operands =
      llvm::map_to_vector(read.getIndices(), [&](Value i) {
        return i == row ? base : mapping.lookup(i);
      });
  std::optional<SmallVector<Value, 8>> coords =
      affine::expandAffineMap(b, loc, read.getMap(), operands);
  Type elem = read.getType();
  int64_t bytes = v * std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
  // Vectors of up to 16 bytes start at multiples of their size; wider
  // ones (8 f32 beside 8 bf16) at multiples of 16 bytes at least.
  return vector::LoadOp::create(
      b, loc, VectorType::get({v}, elem), tensors.lookup(read.getTensor()),
      *coords, /*nontemporal=*/false,
      llvm::MaybeAlign(llvm::isPowerOf2_64(bytes) ? std::min<int64_t>(bytes, 16)
                                                  : 0));
}

/// The `v` elements of `gather` (isVectorizable) at row index values base ..
/// base + v - 1 as one vector load: its data coordinates clamped, or (the
/// zero policy) the vector zero where they are out of range (the last
/// coordinate has no data: the whole vector is in or out).
static FailureOr<Value> emitVectorGather(OpBuilder &b, Location loc,
                                         GatherOp gather, Value row, Value base,
                                         int64_t v, IRMapping &mapping,
                                         IRMapping &tensors,
                                         BodyEmitter &emitter) {
  mapping.map(row, base);
  // Its data may be a constant hoisted out of the body.
  if (failed(emitter.materialize(gather, mapping)))
    return failure();
  Value inside;
  FailureOr<SmallVector<Value>> coords =
      emitter.getGatherCoordinates(b, gather, mapping, inside);
  if (failed(coords))
    return failure();
  Type elem = gather.getType();
  int64_t bytes = v * std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
  auto type = VectorType::get({v}, elem);
  Value vec = vector::LoadOp::create(
      b, loc, type, tensors.lookup(gather.getTensor()), *coords,
      /*nontemporal=*/false,
      llvm::MaybeAlign(llvm::isPowerOf2_64(bytes) ? std::min<int64_t>(bytes, 16)
                                                  : 0));
  if (!inside)
    return vec;
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getZeroAttr(elem)));
  return arith::SelectOp::create(b, loc, inside, vec, zero).getResult();
}

/// The conditions under which `read`'s value is used, when every use is an
/// operand of an `arith.select` that takes it on one side (the condition,
/// negated for the false side) and each condition is scalar code of
/// indices and constants among `ops` (no reads: computable before the
/// load); else none. A concatenation written as masked reads
/// (`select(j < n, a[j], 0) + select(j >= n, b[j - n], 0)`, the gradient
/// of reads at column offsets) uses each read on one side only.
struct UseConditions {
  /// Each use's condition and whether the use takes the read when it holds.
  SmallVector<std::pair<Value, bool>> conditions;
  /// The operations of `ops` the conditions are computed by.
  llvm::SmallPtrSet<Operation *, 8> slice;
};

static std::optional<UseConditions>
getUseConditions(ReadOp read, ArrayRef<Operation *> ops) {
  UseConditions result;
  SmallVector<std::pair<Value, bool>> &conditions = result.conditions;
  Value x = read.getResult();
  if (x.use_empty())
    return std::nullopt;
  for (OpOperand &use : x.getUses()) {
    auto sel = dyn_cast<arith::SelectOp>(use.getOwner());
    if (!sel || use.getOperandNumber() == 0 ||
        sel.getTrueValue() == sel.getFalseValue())
      return std::nullopt;
    conditions.push_back({sel.getCondition(), use.getOperandNumber() == 1});
  }
  // Each condition's operations: in `ops`, reading nothing.
  for (auto [c, polarity] : conditions) {
    SmallVector<Value> work{c};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def)
        continue;
      if (isa<ReadOp, GatherOp, ComprehensionOp>(def) || def->getNumRegions())
        return std::nullopt;
      // Values from outside the body (hoisted constants) are leaves.
      if (!llvm::is_contained(ops, def))
        continue;
      if (result.slice.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
  }
  return result;
}

/// Emits `ops` (operations of a body, in order) `v` times, for row index
/// values `base + e`, e < v. Reads whose last coordinate is the row index
/// are loaded once, as one vector of `v` elements at `base` (16 bytes for
/// the schedule's vector width); the others are emitted per element. A
/// read used only where a select's condition takes it
/// (getUseConditions) is loaded only when some element of the vector
/// takes it (the half of a concatenation a vector is not in is not read).
/// `each(b, e)` runs after each evaluation, with `mapping` holding its
/// values.
LogicalResult
mlir::tang::emitUnrolled(OpBuilder &b, Location loc, ArrayRef<Operation *> ops,
                         Value row, Value base, int64_t v, IRMapping &mapping,
                         IRMapping &tensors, BodyEmitter &emitter,
                         llvm::function_ref<void(OpBuilder &, int64_t)> each,
                         RowCache *cache, int64_t iteration) {
  llvm::DenseMap<Operation *, Value> vectors;
  // Operations that do not depend on the row index (a gathered row's data
  // coordinate, a row's scalar) are emitted once, before the loads.
  llvm::SmallPtrSet<Operation *, 8> invariant;
  for (Operation *op : ops) {
    if (op->getNumResults() == 0 ||
        llvm::any_of(op->getResults(), [&](Value r) {
          return dependsOn(r, row, *op->getBlock());
        }))
      continue;
    if (failed(emitter.emit(b, op, mapping)))
      return failure();
    invariant.insert(op);
  }
  for (Operation *op : ops) {
    if (invariant.contains(op))
      continue;
    // A gather's data must be known before the vector load: computed
    // outside the body or by the operations emitted once above (a gather
    // whose row comes from a value read per element is emitted per
    // element).
    if (auto gather = dyn_cast<GatherOp>(op);
        gather && isVectorizable(gather, row, v) &&
        llvm::all_of(gather.getValues(), [&](Value d) {
          Operation *def = d.getDefiningOp();
          return def ? invariant.contains(def) || !llvm::is_contained(ops, def)
                     : !dependsOn(d, row, *op->getBlock()) &&
                           mapping.contains(d);
        })) {
      FailureOr<Value> vec = emitVectorGather(b, loc, gather, row, base, v,
                                              mapping, tensors, emitter);
      if (failed(vec))
        return failure();
      vectors[op] = *vec;
      continue;
    }
    auto read = dyn_cast<ReadOp>(op);
    if (!read || !isVectorizable(read, row, v))
      continue;
    if (cache) {
      Value cached = cache->lookup(read, row, iteration, mapping);
      if (cached && cast<VectorType>(cached.getType()).getNumElements() == v) {
        vectors[op] = cached;
        continue;
      }
    }
    std::optional<UseConditions> conditions = getUseConditions(read, ops);
    if (!conditions) {
      vectors[op] =
          emitVectorLoad(b, loc, read, row, base, v, mapping, tensors);
    } else {
      // Whether some element takes the read: its conditions' operations
      // emitted per element (again below, where they are folded away).
      Value any = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
      for (int64_t e = 0; e < v; ++e) {
        mapping.map(
            row, arith::AddIOp::create(
                     b, loc, base, arith::ConstantIndexOp::create(b, loc, e)));
        for (Operation *inner : ops)
          if (!invariant.contains(inner) && conditions->slice.contains(inner) &&
              failed(emitter.emit(b, inner, mapping)))
            return failure();
        for (auto [c, polarity] : conditions->conditions) {
          Value taken = mapping.lookup(c);
          if (!polarity)
            taken = arith::XOrIOp::create(
                b, loc, taken,
                arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
          any = arith::OrIOp::create(b, loc, any, taken);
        }
      }
      auto type = VectorType::get({v}, read.getType());
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{type}, any,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        scf::YieldOp::create(
            b, loc,
            emitVectorLoad(b, loc, read, row, base, v, mapping, tensors));
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        scf::YieldOp::create(
            b, loc,
            arith::ConstantOp::create(
                b, loc,
                DenseElementsAttr::get(type, b.getZeroAttr(read.getType())))
                .getResult());
      }
      vectors[op] = ifOp.getResult(0);
    }
    if (cache)
      cache->insert(read, row, iteration, mapping, vectors[op]);
  }
  for (int64_t e = 0; e < v; ++e) {
    Value idx =
        e == 0 ? base
               : arith::AddIOp::create(
                     b, loc, base, arith::ConstantIndexOp::create(b, loc, e))
                     .getResult();
    mapping.map(row, idx);
    for (Operation *op : ops) {
      if (invariant.contains(op))
        continue;
      if (Value vec = vectors.lookup(op)) {
        Value x = vector::ExtractOp::create(b, loc, vec, e);
        Type ct = getComputeType(x.getType());
        if (ct != x.getType())
          x = arith::ExtFOp::create(b, loc, ct, x);
        mapping.map(op->getResult(0), x);
        continue;
      }
      if (failed(emitter.emit(b, op, mapping)))
        return failure();
    }
    each(b, e);
  }
  return success();
}

/// Each thread's partial carrier of a one-index reduction `red` along its
/// index, `v` elements at a time: the thread covers elements
/// [tid * v, tid * v + v) + k * threads * v, the last pass partial when
/// `extent` is not a multiple of threads * v (a multiple of v: each vector
/// is in the row or past it). Strided: for commutative monoids only (the
/// others go through emitPartialReduction).
FailureOr<SmallVector<Value>> mlir::tang::emitVectorPartial(
    OpBuilder &b, Location loc, ComprehensionOp red, ArrayRef<Operation *> ops,
    Value row, int64_t extent, const MonoidCodegen &mc, Value tid,
    int64_t threads, int64_t v, IRMapping &mapping, IRMapping &tensors,
    BodyEmitter &emitter, RowCache *cache, int64_t unroll) {
  assert(mc.isCommutative() && "a strided partial reorders the reduction");
  Value start = arith::MulIOp::create(
      b, loc, tid, arith::ConstantIndexOp::create(b, loc, v));
  assert(extent % v == 0 && "a vector straddles the row's end");
  // Combines the body's yields, as `mapping` holds them, into `carrier`.
  auto combineInto = [&](SmallVector<Value> &into) {
    return [&, carrier = &into](OpBuilder &eb, int64_t) {
      SmallVector<Value> yields =
          llvm::map_to_vector(red.getYield().getValues(), [&](Value y) {
            return mapping.lookupOrDefault(y);
          });
      *carrier = mc.accumulate(eb, loc, *carrier, yields);
    };
  };
  int64_t trips = extent / (threads * v);
  if (cache && trips <= kMaxRowTrips && extent % (threads * v) == 0) {
    // Unrolled: the row's vectors stay in registers for later passes.
    SmallVector<Value> carrier = mc.identity(b, loc);
    for (int64_t it = 0; it < trips; ++it) {
      Value base = arith::AddIOp::create(
          b, loc, start,
          arith::ConstantIndexOp::create(b, loc, it * threads * v));
      if (failed(emitUnrolled(b, loc, ops, row, base, v, mapping, tensors,
                              emitter, combineInto(carrier), cache, it)))
        return failure();
    }
    return carrier;
  }
  auto cst = [&](int64_t c) {
    return arith::ConstantIndexOp::create(b, loc, c).getResult();
  };
  bool failedBody = false;
  // One trip of `passes` vectors per thread at `base`, base + threads * v,
  // ...: every load issued before the first combine waits (so they are in
  // flight together), the combines in element order (the order, and the
  // result, of one vector per trip).
  auto pass = [&](OpBuilder &ob, Value base, ValueRange iter, int64_t passes) {
    SmallVector<Value> carrier(iter);
    SmallVector<Value> at{base};
    for (int64_t u = 1; u < passes; ++u)
      at.push_back(arith::AddIOp::create(
          ob, loc, base,
          arith::ConstantIndexOp::create(ob, loc, u * threads * v)));
    // Every vector of the trip loaded first, then the combines.
    RowCache loaded;
    if (passes > 1)
      for (auto [u, a] : llvm::enumerate(at))
        for (Operation *op : ops)
          if (auto read = dyn_cast<ReadOp>(op);
              read && isVectorizable(read, row, v))
            loaded.insert(
                read, row, u, mapping,
                emitVectorLoad(ob, loc, read, row, a, v, mapping, tensors));
    for (auto [u, a] : llvm::enumerate(at))
      if (failed(emitUnrolled(ob, loc, ops, row, a, v, mapping, tensors,
                              emitter, combineInto(carrier),
                              passes > 1 ? &loaded : nullptr, u)))
        failedBody = true;
    scf::YieldOp::create(ob, loc, carrier);
  };
  SmallVector<Value> init = mc.identity(b, loc);
  // `unroll` vectors per trip while all of them are in the row (the
  // schedule's stages: loads in flight per thread), then one at a time.
  int64_t group = threads * v * unroll;
  if (unroll > 1 && extent >= group) {
    Value mainEnd = cst(extent - (unroll - 1) * threads * v);
    auto main = scf::ForOp::create(
        b, loc, start, mainEnd, cst(group), init,
        [&](OpBuilder &ob, Location, Value base, ValueRange iter) {
          pass(ob, base, iter, unroll);
        });
    // Where the main loop stopped: start + ceil((mainEnd - start) / group)
    // * group (start < mainEnd for every thread: tid * v < threads * v).
    Value trips = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc,
                              arith::SubIOp::create(b, loc, mainEnd, start),
                              cst(group - 1)),
        cst(group));
    start = arith::AddIOp::create(
        b, loc, start, arith::MulIOp::create(b, loc, trips, cst(group)));
    init = SmallVector<Value>(main.getResults());
  }
  auto loop =
      scf::ForOp::create(b, loc, start, cst(extent), cst(threads * v), init,
                         [&](OpBuilder &ob, Location, Value base,
                             ValueRange iter) { pass(ob, base, iter, 1); });
  if (failedBody)
    return failure();
  return SmallVector<Value>(loop.getResults());
}
