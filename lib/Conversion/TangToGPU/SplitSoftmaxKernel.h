//===- SplitSoftmaxKernel.h - online softmax split over keys ----*- C++ -*-===//
//
// The split-softmax (flash-decoding) emitter: its partial kernel on lanes
// (SplitSoftmaxKernel.cpp) or on mma.sync tensor cores
// (SplitSoftmaxMma.cpp), the block's and the splits' combines they share.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_SPLITSOFTMAXKERNEL_H
#define TANG_LIB_CONVERSION_TANGTOGPU_SPLITSOFTMAXKERNEL_H

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::tang {

struct RowCache;

namespace split_softmax {
/// Warps per block of the partial kernel.
constexpr int64_t kWarps = 4;
/// Blocks of the partial kernel a multiprocessor holds at least (its
/// register budget).
constexpr int64_t kBlocksPerSm = 4;
/// Keys per key set per step.
constexpr int64_t kUnroll = 4;
/// Keys per block at least.
constexpr int64_t kMinKeys = kWarps * kUnroll * 4;
/// Splits the combining kernel takes a step (their loads in flight at
/// once).
constexpr int64_t kCombineUnroll = 8;

} // namespace split_softmax

class SplitSoftmaxEmitter {
public:
  SplitSoftmaxEmitter(KernelRequest &r, const MonoidCodegen &monoid,
                      bool approximate)
      : r(r), approximate(approximate), op(r.op), m(*r.choice.splitSoftmax),
        splits(r.choice.splits), loc(op.getLoc()), monoid(monoid),
        carrierSize(static_cast<int64_t>(monoid.getCarrierTypes().size())) {}

  LogicalResult emit();

private:
  Value cst(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  /// Whether nested reduction `red` of the body runs on a key's lanes:
  /// one static reduced index, a commutative monoid of f32 carriers, and
  /// no dependence on the value column (the score's dot product).
  bool isWarpReduction(ComprehensionOp red,
                       const llvm::SetVector<Operation *> &columnOps);
  /// `red` on the key's lanes (layout.lanes of them; `lane` is the index
  /// among them): lane l takes runs of `v` indices from l * v, lanes x v
  /// apart, loading them as vectors (shared through `cache`), or, when the
  /// extent is not a multiple of lanes x v for any v > 1, indices l, l +
  /// lanes, ...; the lanes' carriers combined by xor shuffles; maps its
  /// results in `mapping` (every lane gets them).
  LogicalResult emitWarpReduction(OpBuilder &b, BodyEmitter &emitter,
                                  ComprehensionOp red, Value lane,
                                  IRMapping &mapping, RowCache &cache);
  /// How a key's lanes hold its value columns: `lanes` lanes (a power of
  /// two dividing 32: a warp takes 32 / lanes keys at once) of `vector`
  /// columns at a time, `runs` runs of them (SplitSoftmaxKernel.cpp).
  struct LaneLayout {
    int64_t lanes, vector, runs;
  };
  LaneLayout getLaneLayout();
  /// The keys (n) of the row at `point` (the extent, below the key limit
  /// where there is one: m.keyLimit, computed at `point`) and the keys per
  /// block (chunk): ceil(n / splits), at least kMinKeys (a short context on
  /// few blocks, the others done at once).
  FailureOr<std::pair<Value, Value>>
  emitChunk(OpBuilder &b, BodyEmitter &emitter, IRMapping point);
  /// With a key limit: maps its comparison to true in `mapping` (it holds
  /// on every key of a block's run) and returns it, the operation not to
  /// emit; null without one.
  Operation *mapLimitTrue(OpBuilder &b, IRMapping &mapping);
  /// Maps the parallel indices but the value column to row `row`'s point.
  void mapRow(OpBuilder &b, Value row, IRMapping &mapping);
  /// Maps the parallel indices before the last two (h, d) to the point of
  /// row group `g` (m.group consecutive values of h); returns k, the
  /// group's rows being h = m.group * k + c.
  Value mapGroup(OpBuilder &b, Value g, IRMapping &mapping);
  /// The partial kernel (r.k): each block's carriers into `scratch`.
  LogicalResult emitPartial(Value scratch);
  /// emitPartial with the products on tensor cores (m.mma).
  LogicalResult emitPartialMma(Value scratch);
  /// Sizes the partial kernel's grid (splits x row groups) and block
  /// (kWarps warps); returns the workgroup buffer [kWarps, m.group, m.dv,
  /// carrier] the warps' carriers go through.
  Value startPartial();
  /// After the warps' carriers are in `buf`: a barrier, then a thread per
  /// row and column combines them in warp order into row group
  /// `groupRow`'s rows of split `split` in the scratch.
  void emitBlockCombine(OpBuilder &b, Value buf, Value scratch, Value tid,
                        Value groupRow, Value split);
  /// The combining kernel `f`: the splits' carriers, finalised, into the
  /// output.
  LogicalResult emitCombine(Kernel &f, unsigned scratchArg, unsigned outArg);

  KernelRequest &r;
  /// 16-bit outputs: the exponentials' and divisions' approximations.
  bool approximate;
  ComprehensionOp op;
  const SplitSoftmaxMatch &m;
  int64_t splits;
  Location loc;
  const MonoidCodegen &monoid;
  int64_t carrierSize;
  LaneLayout layout;
};

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_SPLITSOFTMAXKERNEL_H
