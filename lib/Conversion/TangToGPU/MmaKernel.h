//===- MmaKernel.h - the tensor-core contraction emitter --------*- C++ -*-===//
//
// The tensor-core contraction kernel's emitter (its configuration:
// MmaConfig, Tang/Analysis/KernelChoice.h), shared by
// MmaKernel.cpp (the kernel's outline, its pattern),
// MmaEmitter.cpp (operand loads, mma.sync, the epilogue) and MmaWgmma.cpp
// (wgmma and the warp-specialised persistent kernel).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H
#define TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H

#include "KernelForm.h"
#include "TensorCoreEmitter.h"

namespace mlir::tang {

class MmaEmitter : TensorCoreEmitterBase {
public:
  /// `r`'s kernel for contraction `c` of its comprehension with tiles
  /// `cfg` (a split one adds its workspace and second kernel through `r`).
  MmaEmitter(KernelRequest &r, const MmaContraction &c, const MmaConfig &cfg)
      : TensorCoreEmitterBase(r.b, r.op.getLoc(), c.elementType), op(r.op),
        c(c), tensors(r.tensors), outputs(r.outputs), k(r.k), cfg(cfg),
        request(r) {}

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
  /// (all of them by default), through tileC ([bm, width + 8]). With split
  /// k, the tile's f32 sums go to the workspace instead.
  LogicalResult emitEpilogue(ValueRange acc, int64_t colBase = 0,
                             int64_t width = 0);
  /// At `b`: the rest of the body at batch point `batchAt`, row `m` and
  /// columns n .. n + v - 1, the contraction's values being `accs`
  /// (vector<v x f32>), evaluated by `emitter` and stored into `out`.
  LogicalResult emitResults(BodyEmitter &emitter, ArrayRef<Value> batchAt,
                            Value m, Value n, Value accs, int64_t v, Value out);
  /// Split k: the workspace ([splitK x batch points, M, N] f32) and the
  /// second kernel, which adds each output's splitK partial sums in order
  /// and evaluates the epilogue (a thread per v outputs).
  LogicalResult emitSplitCombine();

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
  KernelRequest &request;
  /// The block's run of k steps: from step stepBase, stepCount of them
  /// (all of K without split k).
  Value stepBase, stepCount;
  /// Split k: the f32 workspace and the block's slot in it (batch point
  /// x splitK + split).
  Value workspace, workspaceSlot;
};

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_MMAKERNEL_H
