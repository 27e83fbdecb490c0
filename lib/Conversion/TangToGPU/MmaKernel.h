//===- MmaKernel.h - the tensor-core contraction emitter --------*- C++ -*-===//
//
// The tensor-core contraction kernel's configuration and emitter, shared by
// MmaKernel.cpp (the configuration, the kernel's outline, its pattern),
// MmaEmitter.cpp (operand loads, mma.sync, the epilogue) and MmaWgmma.cpp
// (wgmma and the warp-specialised persistent kernel).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H
#define TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H

#include "KernelForm.h"
#include "TensorCoreEmitter.h"

namespace mlir::tang {

/// The tile configuration, from the schedule.
struct MmaConfig {
  int64_t bm = 128, bn = 128, bk = 32, stages = 4, warpsM = 2, warpsN = 2;
  /// wgmma: a warpgroup (4 warps) per 64 rows, each covering all bn
  /// columns; bk is 64 or 32 (one 128- or 64-byte swizzled row of 16-bit
  /// values).
  bool wgmma = false;
  /// wgmma: operands by bulk tensor copies (TMA) on mbarriers, issued by
  /// one thread, instead of cp.async by all.
  bool tma = false;
  /// wgmma + TMA: a producer warpgroup and a persistent grid
  /// (emitWarpSpecialized).
  bool warpSpecialized = false;
  /// Bytes per operand element: 2 (f16, bf16) or 4 (f32 as tf32, mma.sync
  /// only; bk 32, one 128-byte row).
  int64_t eb = 2;
  /// Shared memory a block may use (the target's shared_per_block).
  int64_t maxShared = 0;
  /// Multiprocessors (the target's sm_count).
  int64_t smCount = 0;
  int64_t threads() const { return warpsM * warpsN * 32; }
  int64_t ringBytes() const { return stages * (bm + bn) * bk * eb; }
  /// Elements per 16-byte chunk (one cp.async).
  int64_t vec() const { return 16 / eb; }
  /// Bytes per row of a [.., bk] tile.
  int64_t rowBytes() const { return bk * eb; }
  int64_t tm() const { return bm / warpsM; }
  int64_t tn() const { return bn / warpsN; }
  /// Whether the emitter supports this configuration.
  bool isValid() const {
    auto pow2In = [](int64_t v, int64_t lo, int64_t hi) {
      return llvm::isPowerOf2_64(v) && v >= lo && v <= hi;
    };
    if (wgmma)
      return pow2In(bm, 64, 128) && pow2In(bn, 64, 256) &&
             (bk == 32 || (bk == 64 && eb == 2)) && stages >= 3 &&
             stages <= 8 && warpsM == bm / 16 && warpsN == 1 &&
             ringBytes() + 1024 <= maxShared;
    return pow2In(bm, 32, 256) && pow2In(bn, 32, 256) &&
           (bk == 32 || (bk == 64 && eb == 2)) && stages >= 2 && stages <= 8 &&
           pow2In(warpsM, 1, 8) && pow2In(warpsN, 1, 8) && threads() <= 512 &&
           tm() % 16 == 0 && tn() % 16 == 0 &&
           (bm * bk / vec()) % threads() == 0 &&
           (bn * bk / vec()) % threads() == 0 && tm() * tn() / 32 <= 128 &&
           ringBytes() <= maxShared && bm * (bn + 8) * 4 <= maxShared;
  }
};

/// The configuration of `op`'s kernel, contraction `c`, on mma.sync or
/// (`wgmma`) wgmma.
MmaConfig getMmaConfig(ComprehensionOp op, const MmaContraction &c, bool wgmma);

class MmaEmitter : TensorCoreEmitterBase {
public:
  MmaEmitter(OpBuilder &b, ComprehensionOp op, const MmaContraction &c,
             IRMapping &tensors, ValueRange outputs, Kernel &k, bool wgmma,
             bool tma, bool warpSpecialize)
      : TensorCoreEmitterBase(b, op.getLoc(), c.elementType), op(op), c(c),
        tensors(tensors), outputs(outputs), k(k),
        cfg(getMmaConfig(op, c, wgmma)) {
    cfg.tma = tma && cfg.wgmma && cfg.rowBytes() == 128 && isBox(c.a, true) &&
              isBox(c.b, false);
    // Warp specialisation pays with 256-column tiles; narrower ones (small
    // products) run better as single-role kernels, several blocks per
    // multiprocessor (tf32 4096^3 in 128-column tiles: 235 against 338
    // TFLOP/s, bench/results/2026-12-01-h200-tensor-cores-ws.md).
    cfg.warpSpecialized = cfg.tma && warpSpecialize && cfg.bn >= 256;
  }

  LogicalResult emit();

private:
  /// The physical 16-byte chunk of logical chunk `chunk` in row `row` of a
  /// shared tile with `chunks` chunks per row.
  Value swizzle(Value row, Value chunk, int64_t chunks);
  /// Issues the cp.async copies of step `kt` into ring slot `slot`.
  void emitLoads(Value kt, Value slot);
  /// The tensor coordinates `read` reads at the batch point, row `row` of
  /// index `rowIndex` and column `col` of `colIndex`.
  SmallVector<Value> getCoordinates(ReadOp read, Value rowIndex, Value row,
                                    Value colIndex, Value col);
  /// Whether the tiles of operand `read` (the left one with `isA`) are
  /// boxes of its tensor that a bulk tensor copy fills: the column index
  /// alone in the last coordinate, the row index plus batch terms in one
  /// other, batch indices only elsewhere, and no rows or columns past the
  /// reduced index's extent inside the tensor (they must read as zeros).
  bool isBox(ReadOp read, bool isA);
  /// TMA: the tensor-map parameters and the ring's mbarriers (`stages`
  /// of 8 bytes at `barriers`, a shared-memory address).
  void emitTmaSetup();
  /// TMA: thread 0 expects the bytes of step `kt` on slot `slot`'s
  /// mbarrier and issues its copies.
  void emitTmaLoads(Value kt, Value slot);
  /// TMA: waits for step `kt` (slot `slot`) to land.
  void emitTmaWait(Value kt, Value slot);
  /// TMA: the operands' tensor-map parameters.
  void createTensorMaps();
  /// Expects step `kt`'s bytes on slot `slot`'s full barrier and issues its
  /// bulk copies (from the calling thread).
  void emitTmaIssue(Value kt, Value slot);

  /// The tile of linear index `pid` (grouped order) of batch point
  /// `batchIndex`: sets m0, n0 and batch.
  void setTile(Value pid, Value batchIndex);
  /// Synchronises the threads that compute: all, or in the
  /// warp-specialised kernel the consumer warpgroups (named barrier 1).
  void syncConsumers();
  /// One k step of wgmma from ring slot `slot` (fence, products, commit).
  Value emitWgmmaStep(Value slot, Value acc);
  /// The warp-specialised, persistent wgmma kernel: a producer warpgroup
  /// (one thread issuing bulk copies into the ring as slots free up) and
  /// bm / 64 consumer warpgroups (products, then the epilogue through their
  /// own staging tile while the producer already loads the next tile).
  LogicalResult emitWarpSpecialized();

  /// Copies 16-byte chunks of `read` into `tile` (rows x chunks per row):
  /// row `r` of the tile is `rowIndex` = rowBase + r, chunk `ch` holds
  /// `colIndex` = colBase + 8 ch.
  /// With `blocked`, the tile is [slot, chunks / 8, rows, 64]: columns in
  /// blocks of 64 (wgmma's layout of an operand contiguous in m or n).
  void emitTileLoad(ReadOp read, Value tile, Value slot, int64_t rows,
                    int64_t chunks, Value rowIndex, Value rowBase,
                    int64_t rowExtent, Value colIndex, Value colBase,
                    int64_t colExtent, bool blocked = false);
  /// The wgmma pipeline; returns the accumulators in the order of
  /// storeFragment's (row, column) mapping.
  SmallVector<Value> emitWgmmaMainLoop();
  SmallVector<Value> emitMmaSyncMainLoop();
  /// A wgmma shared-memory matrix descriptor (128- or 64-byte swizzle: rows
  /// of bk 16-bit values).
  Value descriptor(Value byteAddress, int64_t lbo, int64_t sbo);
  /// Stores accumulators (c0, c1) at (row, col) and (c2, c3) at
  /// (row + 8, col) of the shared result tile.
  void storeQuad(Value row, Value col, ArrayRef<Value> quad);
  /// The mma.sync steps of one BK slice from ring slot `slot`.
  SmallVector<Value> emitCompute(Value slot, ValueRange acc);
  /// The epilogue of result columns [colBase, colBase + width) of the tile
  /// (all of them by default), through tileC ([bm, width + 8]).
  LogicalResult emitEpilogue(ValueRange acc, int64_t colBase = 0,
                             int64_t width = 0);

  ComprehensionOp op;
  MmaContraction c; // A copy: op handles' accessors are not const.
  IRMapping &tensors;
  ValueRange outputs;
  Kernel &k;
  MmaConfig cfg;

  Value tid, lane, warpM, warpN, m0, n0;
  SmallVector<Value> batch; // Batch index values (op's indices, by position).
  Value tileA, tileB; // [stages, bm, bk] and [stages, bk, bn] or [.., bn, bk]
  /// 16-bit views of tileA and tileB where they are [.., bk] (for ldmatrix;
  /// the tiles themselves for 16-bit operands).
  Value tileA16, tileB16;
  Value tileC;      // [bm, bn + 8] f32, aliasing the ring.
  Value smemBase;   // wgmma: the ring's shared-memory address.
  Value lastGroup;  // A cp.async group token (the wait ignores it).
  Value mapA, mapB; // TMA: the operands' tensor maps.
  Value barriers;   // TMA: the ring's mbarriers (shared address).
};

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H
