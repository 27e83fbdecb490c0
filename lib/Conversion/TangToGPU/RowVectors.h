//===- RowVectors.h - vector loads along a row ------------------*- C++ -*-===//
//
// What the row, matrix-vector and split-softmax kernels share: body
// operations emitted for runs of a row index with the reads along it loaded
// as vectors (and reused), per-thread partial reductions built on them, and
// the combine of a warp's carriers by shuffles.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_ROWVECTORS_H
#define TANG_LIB_CONVERSION_TANGTOGPU_ROWVECTORS_H

#include "BodyEmitter.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tang {

/// Vectors already loaded along a row, reused by later passes over the same
/// row (a row short enough to stay in registers is read from memory once)
/// and by other reads of the same elements (a matrix-vector kernel's rows
/// of the batch share each weight vector). With `sharedIndex` set, the
/// reads in `sharedReads` ignore that index too: rows that differ only in
/// it read the same elements there (a group of query heads of one
/// key/value head, SplitSoftmaxKernel.cpp), and share the vectors.
struct RowCache {
  struct Entry {
    Value tensor;
    AffineMap map;
    SmallVector<Value> others; // The read's index values, the row's nulled.
    int64_t iteration;
    Value vector;
  };
  SmallVector<Entry> entries;
  Value sharedIndex;
  llvm::SmallPtrSet<Operation *, 4> sharedReads;

  Value lookup(ReadOp read, Value row, int64_t iteration,
               const IRMapping &mapping) {
    SmallVector<Value> others = getOthers(read, row, mapping);
    for (Entry &e : entries)
      if (e.tensor == read.getTensor() && e.map == read.getMap() &&
          e.others == others && e.iteration == iteration)
        return e.vector;
    return {};
  }
  void insert(ReadOp read, Value row, int64_t iteration,
              const IRMapping &mapping, Value vector) {
    entries.push_back({read.getTensor(), read.getMap(),
                       getOthers(read, row, mapping), iteration, vector});
  }
  /// The values the read's indices other than `row` (and the shared
  /// index, for the shared reads) have where it is emitted.
  SmallVector<Value> getOthers(ReadOp read, Value row,
                               const IRMapping &mapping) const {
    bool shared = sharedIndex && sharedReads.contains(read);
    return llvm::map_to_vector(read.getIndices(), [&](Value i) {
      return i == row || (shared && i == sharedIndex)
                 ? Value()
                 : mapping.lookupOrDefault(i);
    });
  }
};

/// Trip counts up to this are unrolled so that a row stays in registers.
constexpr int64_t kMaxRowTrips = 4;

/// A 32-bit carrier (f32 or i32) as the f32 bits workgroup buffers and
/// workspaces hold, and back as type `t`.
inline Value carrierToF32(OpBuilder &b, Location loc, Value v) {
  return v.getType().isF32()
             ? v
             : arith::BitcastOp::create(b, loc, b.getF32Type(), v).getResult();
}
inline Value carrierFromF32(OpBuilder &b, Location loc, Value v, Type t) {
  return t.isF32() ? v : arith::BitcastOp::create(b, loc, t, v).getResult();
}

/// Combines each lane's `carrier` across its warp (32 lanes), or across
/// each aligned group of `width` lanes (a power of two); every lane gets
/// its group's carrier (RowVectors.cpp says in which order).
SmallVector<Value> emitWarpCombine(OpBuilder &b, Location loc,
                                   const MonoidCodegen &monoid,
                                   SmallVector<Value> c, Value lane,
                                   int32_t width = 32);

/// The `v` elements of `read` at row index values base .. base + v - 1
/// (isVectorizable), its other indices as `mapping` has them, as one
/// vector load.
Value emitVectorLoad(OpBuilder &b, Location loc, ReadOp read, Value row,
                     Value base, int64_t v, const IRMapping &mapping,
                     IRMapping &tensors);

/// Emits `ops` (operations of a body, in order) `v` times, for row index
/// values `base + e`, e < v, the reads along the row loaded once as
/// vectors (through `cache` when given); `each(b, e)` runs after each
/// evaluation, with `mapping` holding its values.
LogicalResult emitUnrolled(OpBuilder &b, Location loc,
                           ArrayRef<Operation *> ops, Value row, Value base,
                           int64_t v, IRMapping &mapping, IRMapping &tensors,
                           BodyEmitter &emitter,
                           llvm::function_ref<void(OpBuilder &, int64_t)> each,
                           RowCache *cache = nullptr, int64_t iteration = -1);

/// Thread `tid`'s partial carrier (of `threads`) of the one-index
/// reduction `red` (commutative monoid `mc`) along its index `row` of
/// extent `extent`, `v` elements at a time: the thread covers elements
/// [tid * v, tid * v + v) + k * threads * v. `ops`: the operations of its
/// body to emit per element.
FailureOr<SmallVector<Value>>
emitVectorPartial(OpBuilder &b, Location loc, ComprehensionOp red,
                  ArrayRef<Operation *> ops, Value row, int64_t extent,
                  const MonoidCodegen &mc, Value tid, int64_t threads,
                  int64_t v, IRMapping &mapping, IRMapping &tensors,
                  BodyEmitter &emitter, RowCache *cache, int64_t unroll = 1);

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_ROWVECTORS_H
