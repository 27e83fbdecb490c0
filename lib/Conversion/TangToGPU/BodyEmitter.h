//===- BodyEmitter.h - scalar code for comprehension bodies -----*- C++ -*-===//
//
// Emits the scalar code of a comprehension body inside a kernel: reads
// become memref loads at the expanded affine index expressions, nested
// comprehensions become loops carrying the monoid's carrier, f16/bf16
// arithmetic is promoted to f32. Shared by every kernel shape.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_BODYEMITTER_H
#define TANG_LIB_CONVERSION_TANGTOGPU_BODYEMITTER_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tang {

/// The type a scalar of storage type `t` is computed in: f32 for f16 and
/// bf16, itself otherwise.
Type getComputeType(Type t);

/// Lets `op` (a math op or a float division) use its fast approximation
/// (`afn`), and a float add, sub or mul contract into fused multiply-adds
/// (`contract`). Used when results are stored in f16/bf16, whose rounding
/// (2^-11, 2^-8) dwarfs the approximations' few f32 ulps.
void allowApproximation(Operation *op);

/// Code for one monoid: its carrier in compute types, identity, lift,
/// combine and finalise.
class MonoidCodegen {
public:
  /// For a comprehension's monoid (builtin or user-defined).
  static FailureOr<MonoidCodegen> get(ComprehensionOp op);
  /// For `monoid` (a builtin or a symbol) named by `op`, combining values
  /// of storage types `yields`.
  static FailureOr<MonoidCodegen> get(Operation *op, Attribute monoid,
                                      TypeRange yields);

  /// Emit fast approximations of exp and division (see allowApproximation).
  void setApproximate(bool a) { approximate = a; }

  ArrayRef<Type> getCarrierTypes() const { return carrierTypes; }
  /// Whether combine(x, y) == combine(y, x): every builtin monoid, and a
  /// user monoid that declares `commutative`. Kernels that split a
  /// reduction over threads may reorder its elements only then; otherwise
  /// each thread takes a consecutive run and the runs are combined in
  /// thread order (emitPartialReduction, emitBlockCombine).
  bool isCommutative() const { return !user || user.getCommutative(); }
  SmallVector<Value> identity(OpBuilder &b, Location loc) const;
  SmallVector<Value> lift(OpBuilder &b, Location loc, ValueRange yields) const;
  SmallVector<Value> combine(OpBuilder &b, Location loc, ValueRange x,
                             ValueRange y) const;
  SmallVector<Value> finalize(OpBuilder &b, Location loc,
                              ValueRange carrier) const;
  /// combine(carrier, lift(yields)), with one exp per element for the
  /// softmax monoids instead of the two a general combine needs.
  SmallVector<Value> accumulate(OpBuilder &b, Location loc, ValueRange carrier,
                                ValueRange yields) const;

private:
  std::optional<MonoidKind> kind;
  /// Op handles are value types whose accessors are not const.
  mutable MonoidOp user;
  bool approximate = false;
  SmallVector<Type> carrierTypes;
};

/// Emits comprehension bodies at a builder's insertion point.
class BodyEmitter {
public:
  /// `tensors` maps every function-level tensor a body may read to the
  /// memref that holds it inside the kernel.
  /// Scalar constants hoisted out of the bodies (to the function level) are
  /// rematerialised at the start of `entry`, where they dominate the kernel.
  BodyEmitter(IRMapping &tensors, Block *entry)
      : tensors(tensors), entry(entry) {}

  /// Emit fast approximations of math functions and divisions (see
  /// allowApproximation).
  void setApproximate(bool a) { approximate = a; }

  /// Emits `body` (a comprehension's block, its indices already mapped in
  /// `mapping` to index values) and returns the yielded values in compute
  /// types.
  FailureOr<SmallVector<Value>> emitBody(OpBuilder &b, Block &body,
                                         IRMapping &mapping);

  /// Emits the reduction of `op` over its reduced indices, its parallel
  /// indices already mapped, as loops carrying the carrier; returns the
  /// finalised results in compute types.
  FailureOr<SmallVector<Value>>
  emitSerialReduction(OpBuilder &b, ComprehensionOp op, IRMapping &mapping);

  /// Emits the carrier (not finalised) of `op`'s reduction over the part of
  /// its domain that thread `tid` of `threads` covers. For a commutative
  /// monoid the threads stride the last reduced index (thread t takes
  /// t, t + threads, ...; the others whole: coalesced reads); otherwise
  /// thread t takes the t-th of `threads` consecutive runs of the row-major
  /// reduced domain, so that combining the partials in thread order is the
  /// reduction in index order. Either way the elements a thread covers are
  /// accumulated in index order.
  FailureOr<SmallVector<Value>>
  emitPartialReduction(OpBuilder &b, ComprehensionOp op, IRMapping &mapping,
                       const MonoidCodegen &monoid, Value tid, int64_t threads,
                       llvm::function_ref<LogicalResult(OpBuilder &)> body);

  /// Emits one operation of a body.
  LogicalResult emit(OpBuilder &b, Operation *op, IRMapping &mapping) {
    return emitOp(b, op, mapping);
  }

  /// A gather's load: its coordinates clamped, or out-of-range ones read as
  /// zero, by its policy (trap is refused: kernels have no error channel).
  LogicalResult emitGather(OpBuilder &b, GatherOp gather, IRMapping &mapping);
  /// Emits a load of `memref` at `map(indices)` in compute type.
  Value emitRead(OpBuilder &b, Location loc, Value memref, AffineMap map,
                 ValueRange indices);

private:
  LogicalResult emitOp(OpBuilder &b, Operation *op, IRMapping &mapping);
  /// A padded read's load: coordinates outside the buffer read the fill.
  Value emitPaddedRead(OpBuilder &b, ReadOp read, Value memref,
                       ValueRange indices);
  /// Loads `memref` at `coords` where `inside` holds (coordinates already
  /// made safe where it does not) and yields `outside` elsewhere, in
  /// compute type.
  Value emitGuardedLoad(OpBuilder &b, Location loc, Value memref,
                        ValueRange coords, Value inside, TypedAttr outside);

  IRMapping &tensors;
  Block *entry;
  bool approximate = false;
};

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_BODYEMITTER_H
