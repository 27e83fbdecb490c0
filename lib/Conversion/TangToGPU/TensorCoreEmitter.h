//===- TensorCoreEmitter.h - what tensor-core kernels share -----*- C++ -*-===//
//
// The building blocks of the tensor-core kernels (contractions, flash
// attention, score kernels): NVVM's mma.sync and wgmma, ldmatrix, swizzled
// shared-memory tiles, mbarriers and bulk tensor copies (TMA). They build
// IR at a builder; what to build is the emitters' (and their schedule's).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_TENSORCOREEMITTER_H
#define TANG_LIB_CONVERSION_TANGTOGPU_TENSORCOREEMITTER_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::tang {

class BodyEmitter;

/// What the tensor-core emitters (MmaKernel.cpp, FlashKernel.cpp,
/// ScoreKernel.cpp) share: index arithmetic at a builder, mma.sync's operand
/// fragments, wgmma, mbarriers and bulk tensor copies.
class TensorCoreEmitterBase {
protected:
  TensorCoreEmitterBase(OpBuilder &b, Location loc, Type elementType)
      : b(b), loc(loc), elementType(elementType) {}

  Value cst(int64_t v);
  Value add(Value x, Value y);
  Value mul(Value x, int64_t y);
  Value div(Value x, int64_t y);
  Value rem(Value x, int64_t y);
  /// x < y, unsigned.
  Value lt(Value x, int64_t y);
  Value minU(Value x, int64_t y);
  /// Four 32-bit operand registers (bf16 pairs as i32, f16 pairs as
  /// vector<2xf16>) from one ldmatrix.x4 of `tile`.
  SmallVector<Value> loadMatrix(Value tile, ValueRange indices, bool transpose);
  /// A shared-memory address as an LLVM pointer in address space 3.
  Value toSharedPointer(Value address);
  /// Waits until the phase of parity `parity` of mbarrier `slot` (8 bytes
  /// each) at shared address `at` has completed.
  void waitBarrier(Value at, Value slot, Value parity);
  /// Arrives (count 1) on mbarrier `slot` at `at`.
  void arriveBarrier(Value at, Value slot);
  /// Thread `tid` 0 initialises `n` mbarriers at `at` (8 bytes apart) for
  /// `count` arrivals each, and fences their initialisation.
  void initBarriers(Value tid, Value at, int64_t n, int64_t count);
  /// The first thread of each warpgroup arrives on mbarrier `slot` at `at`
  /// (after the warpgroup's wgmma reading the slot has been waited for).
  void releaseByWarpgroup(Value tid, Value at, Value slot);
  /// A bulk tensor copy through tensor map `map` of the box at `coords`
  /// (the tensor's coordinates, outermost first) to shared address `dst`,
  /// completing on mbarrier `bar` (an address-space-3 pointer).
  void bulkTensorCopy(Value map, ArrayRef<Value> coords, Value dst, Value bar);
  /// Two f32 values as one operand register (a pair of 16-bit values of
  /// elementType).
  Value packPair(Value lo, Value hi);
  /// Reduces `v` over the 4 lanes that share an mma.sync accumulator row.
  Value rowReduce(Value v, bool max);
  /// acc (scalars in accumulator order) += A B on wgmma m64nNk16 of
  /// elementType, over `steps` k16 steps with operand addresses
  /// `descs(step)` (128-byte swizzled tiles of 64 columns; a transposed,
  /// [k, n], B operand has 64-column blocks `bRows` rows long); waits for
  /// it.
  SmallVector<Value>
  emitWgmma(ArrayRef<Value> acc, int64_t n, int64_t steps, bool accumulate,
            bool bTransposed, int64_t bRows,
            function_ref<std::pair<Value, Value>(int64_t)> descs);
  /// emitWgmma's first half: issues the products and commits them as one
  /// group, without waiting; returns the accumulator struct, whose values
  /// (takeWgmma) may be read only after a wgmma wait that covers the group.
  Value issueWgmma(ArrayRef<Value> acc, int64_t n, int64_t steps,
                   bool accumulate, bool bTransposed, int64_t bRows,
                   function_ref<std::pair<Value, Value>(int64_t)> descs);
  /// acc += A B on wgmma m64nNk16 with A from registers (the RS form): `a`
  /// holds 4 operand registers (i32, pairs of elementType; packOperand)
  /// per k16 step, in the m64k16 fragment order, which is the m64nN
  /// accumulators' order of two adjacent n8 tiles; B at `bAddress(step)` as
  /// in issueWgmma. Issues the `a.size() / 4` steps and commits them as one
  /// group without waiting; returns the accumulators' struct (takeWgmma).
  Value issueWgmmaRegA(ArrayRef<Value> acc, int64_t n, ArrayRef<Value> a,
                       bool bTransposed, int64_t bRows,
                       function_ref<Value(int64_t)> bAddress);
  /// Named barrier `id` (1-15): waits until `threads` threads (this one
  /// included) have arrived or synced on it.
  void syncNamedBarrier(Value id, int64_t threads);
  /// Arrives on named barrier `id` counted for `threads`, without waiting.
  void arriveNamedBarrier(Value id, int64_t threads);
  /// Two f32 values as one 32-bit operand register of elementType pairs.
  Value packOperand(Value lo, Value hi);
  /// Waits until at most `pending` committed wgmma groups are in flight.
  void waitWgmma(int64_t pending = 0);
  /// The n / 2 accumulator values of an issued wgmma's struct.
  SmallVector<Value> takeWgmma(Value st, int64_t n);
  /// Orders this thread's shared-memory writes (cp.async or stores) before
  /// the tensor cores' (async proxy) reads.
  void fenceProxyAsync();
  /// The block's dynamic shared memory, its start rounded up to 1024 bytes
  /// with `align1024` (wgmma's swizzled tiles; the kernel must ask for
  /// 1024 bytes more).
  struct SharedMemory {
    Value memory, base;
    /// The aligned start as a shared-memory address (with align1024).
    Value address;
    /// A view of elementType of `shape` at byte `offset` from the start.
    Value view(TensorCoreEmitterBase &e, ArrayRef<int64_t> shape,
               int64_t offset) const;
  };
  SharedMemory getSharedMemory(bool align1024);
  /// The 16-byte chunk of `chunk` in row `row` of a 128-byte swizzled tile.
  Value swizzle(Value row, Value chunk);
  /// The batch point of a block: `op`'s parallel indices but those `skip`
  /// accepts, decomposed from `linear` (by default the grid's z index;
  /// innermost last); null for the skipped ones.
  SmallVector<Value> decomposeBatch(ComprehensionOp op,
                                    function_ref<bool(unsigned)> skip,
                                    Value linear = {});
  /// acc += a * b on one mma.sync.m16n8k16 tile (f32 accumulators).
  void mmaSync(ArrayRef<Value> a, ArrayRef<Value> bFrag,
               MutableArrayRef<Value> acc);
  /// o += G W for one key step of bn keys (attention's P V, a score
  /// kernel's G W): G is per-key values in accumulator order (this
  /// thread's), W the key-indexed [bn, n] tile `wTile` of the ring (`slot`;
  /// with wgmma, slot 0 at byte `wOffset` of the shared memory at
  /// `smemAddr`), read transposed. G's accumulators are the A operand
  /// directly (with wgmma from registers, packKeyOperand); the product waits.
  void accumulateKeyProduct(MutableArrayRef<Value> o, ArrayRef<Value> g,
                            int64_t bn, int64_t n, bool wgmma, Value smemAddr,
                            Value wTile, int64_t wOffset, Value slot,
                            Value lane);
  /// With wgmma: accumulateKeyProduct's product with G already packed as
  /// the A operand (`a`: packKeyOperand), issued and committed but not
  /// waited for; returns the accumulators' struct (takeWgmma).
  Value issueKeyProduct(ArrayRef<Value> o, ArrayRef<Value> a, int64_t bn,
                        int64_t n, Value smemAddr, int64_t wOffset, Value slot);
  /// The m64nN accumulators `g` of bn key columns as the A operand of a
  /// product over those keys: bn / 16 k16 steps of 4 registers.
  SmallVector<Value> packKeyOperand(ArrayRef<Value> g, int64_t bn);

  OpBuilder &b;
  Location loc;
  /// The operands' element type (f16, bf16, or f32 for tf32 products).
  Type elementType;
};

/// A wgmma shared-memory matrix descriptor for the tile at `byteAddress`
/// (a shared-memory address), leading and stride byte offsets `lbo`, `sbo`,
/// rows swizzled over `swizzleBytes` (128 or 64).
Value emitWgmmaDescriptor(OpBuilder &b, Location loc, Value byteAddress,
                          int64_t lbo, int64_t sbo, int64_t swizzleBytes);

/// The product of the summand factors `factors` of the dot product `red`
/// that depend on no index (a scale), emitted once at `b`; null if there
/// are none, failure() if one cannot be emitted there.
FailureOr<Value> emitConstantFactors(OpBuilder &b, BodyEmitter &emitter,
                                     ComprehensionOp red,
                                     ArrayRef<Value> factors);

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_TENSORCOREEMITTER_H
