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

/// Lets a float add, sub or mul contract into fused multiply-adds (one
/// rounding instead of two: never a larger error) and nothing else: the f32
/// products of the register-tiled SIMT kernel, where a separate multiply
/// and add would double the instructions of its inner loop.
void allowContraction(Operation *op);
/// `acc + x y`, allowed to contract into one fused multiply-add.
Value emitMultiplyAdd(OpBuilder &b, Location loc, Value acc, Value x, Value y);
/// 2^x of an f32 by NVPTX's ex2.approx.ftz (subnormal results flush to 0).
Value emitNvvmExp2(OpBuilder &b, Location loc, Value x);
/// e^x of an f32 as emitNvvmExp2(x log2(e)).
Value emitNvvmExp(OpBuilder &b, Location loc, Value x);

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

/// `s` as an index value at `b`, from the values of the size symbols.
Value buildSize(OpBuilder &b, Location loc, const Size &s,
                ArrayRef<Value> symbols);

/// The sizes inside a kernel of a function with symbolic sizes: the values
/// of the function's size symbols, which the kernel's last parameter holds
/// (one i32 each, loaded once at the kernel's entry), and the logical
/// shape of each flat buffer: a tensor with a `?` dimension is passed as a
/// 1-D memref<?xT> and indexed row-major through these sizes.
class KernelSizes {
public:
  /// Loads the `numSymbols` values of `buffer` at the start of `entry`.
  KernelSizes(Value buffer, unsigned numSymbols, Block *entry);

  /// A builder at the kernel's entry, after the loads of the sizes.
  OpBuilder getEntryBuilder();

  /// The blocks of a launch whose extents are known only when it runs (a
  /// grid-stride loop covers the rest): from the device model, enough to
  /// fill every multiprocessor (setGridBlocks).
  int64_t getGridBlocks() const { return gridBlocks; }
  void setGridBlocks(int64_t n) { gridBlocks = n; }

  /// `s` as an index value (at `b`'s insertion point; the symbols it uses
  /// are loaded at the kernel's entry).
  Value get(OpBuilder &b, Location loc, const Size &s);
  /// Records that `memref` is flat, holding a tensor of `shape`.
  void setFlatShape(Value memref, SmallVector<Size> shape) {
    flatShapes[memref] = std::move(shape);
  }
  bool isFlat(Value memref) const { return flatShapes.count(memref); }
  /// The extent of dimension `d` of the tensor `memref` holds.
  Value getDim(OpBuilder &b, Location loc, Value memref, unsigned d);
  /// The memref's own indices for the tensor coordinates `coords`: a flat
  /// buffer's row-major offset, `coords` otherwise.
  SmallVector<Value> getIndices(OpBuilder &b, Location loc, Value memref,
                                ValueRange coords);

private:
  Block *entry;
  int64_t gridBlocks = 1024;
  SmallVector<Value> symbols;
  llvm::DenseMap<Value, SmallVector<Size>> flatShapes;
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
  /// With approximations, f32 exp as NVPTX's ex2.approx.ftz (a product by
  /// log2(e) and one special-function instruction; results below 2^-126
  /// flush to 0). CUDA kernels only.
  void setNvvmExp(bool e) { nvvmExp = e; }
  /// Let products and sums contract into fused multiply-adds (see
  /// allowContraction), whether or not approximations are allowed.
  void setContract(bool c) { contract = c; }
  /// The kernel's sizes, when its function has symbolic sizes: extents,
  /// flat buffers and size values in bodies are taken from them.
  void setSizes(KernelSizes *s) { sizes = s; }
  /// The extent of index `pos` of `op` as an index value.
  Value getExtent(OpBuilder &b, Location loc, ComprehensionOp op, unsigned pos);

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

  /// The carrier of `op` (one reduced index, `index`) over the indices
  /// lb, lb + step, ... below ub: `op`'s body emitted per index (its other
  /// indices mapped in `mapping`) and accumulated by `monoid`, in order.
  FailureOr<SmallVector<Value>>
  emitStridedReduction(OpBuilder &b, ComprehensionOp op, IRMapping &mapping,
                       const MonoidCodegen &monoid, Value lb, Value ub,
                       Value step);

  /// Brings the function-level values `op` uses into the kernel: scalar
  /// constants hoisted out of bodies are rematerialised and sizes computed
  /// at the kernel's entry (emitOp does this for the ops it emits).
  LogicalResult materialize(Operation *op, IRMapping &mapping);

  /// Emits one operation of a body.
  LogicalResult emit(OpBuilder &b, Operation *op, IRMapping &mapping) {
    return emitOp(b, op, mapping);
  }

  /// A gather's load: its coordinates clamped, or out-of-range ones read as
  /// zero, by its policy (trap is refused: kernels have no error channel).
  LogicalResult emitGather(OpBuilder &b, GatherOp gather, IRMapping &mapping);
  /// The coordinates of `gather` where `mapping` has its indices and data:
  /// clamped by the clamp policy; by the zero policy made safe, `inside`
  /// then holding whether they were in range (null when no coordinate uses
  /// data). Fails on trap (kernels have no error channel).
  FailureOr<SmallVector<Value>> getGatherCoordinates(OpBuilder &b,
                                                     GatherOp gather,
                                                     IRMapping &mapping,
                                                     Value &inside);
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

  /// A load of the tensor in `memref` at `coords`.
  Value load(OpBuilder &b, Location loc, Value memref, ValueRange coords);
  /// The extent of dimension `d` of the tensor in `memref`.
  Value getDim(OpBuilder &b, Location loc, Value memref, unsigned d);

  IRMapping &tensors;
  Block *entry;
  bool approximate = false;
  bool nvvmExp = false;
  bool contract = false;
  KernelSizes *sizes = nullptr;
};

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_BODYEMITTER_H
