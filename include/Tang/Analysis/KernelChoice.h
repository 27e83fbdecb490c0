//===- KernelChoice.h - which kernel, with which parameters -----*- C++ -*-===//
//
// The one place where a comprehension's kernel is decided: its kind (flash
// attention, score, tensor-core contraction, SIMT) and every parameter of
// the tensor-core kernels (tiles, warps, the ring's depth, bulk tensor
// copies, warp specialisation, a persistent grid).
//
// --tang-schedule, given the kernel options, writes the choice into
// #tang.schedule (setKernelSchedule); --convert-tang-to-gpu reads it back
// (getScheduledKernel) or, for a comprehension whose schedule leaves the
// kernel `auto`, calls chooseKernel itself. The emitters build what they are
// given and decide nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_ANALYSIS_KERNELCHOICE_H
#define TANG_ANALYSIS_KERNELCHOICE_H

#include "Tang/Analysis/AttentionMatchers.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Dialect/Tang/IR/TangAttrs.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::tang {

/// The tensor-core kernels a pass builds (its tensor-cores= option).
enum class TensorCoreOption { None, MmaSync, Wgmma, Target };

/// Whether split online-softmax reductions (decode attention) take their
/// products on mma.sync (its split-softmax-mma= option): Auto and On
/// wherever the shape allows (On remarks where it does not).
enum class SplitSoftmaxMmaOption { Auto, On, Off };

/// The instructions `option` stands for in `module` (Target: its
/// #tang.target's tensor_cores).
TensorCoreKind resolveTensorCores(TensorCoreOption option, Operation *module);

/// What the kernels may use, from the pass options and the module's device
/// model.
struct KernelOptions {
  /// Tensor-core code for contractions: none, mma.sync or wgmma.
  TensorCoreKind tensorCores = TensorCoreKind::None;
  /// With wgmma: operands by bulk tensor copies where their views allow.
  bool tma = false;
  /// With tma: a producer warpgroup and a persistent grid (the flash
  /// kernel's producer comes with tma alone; this makes its grid
  /// persistent).
  bool warpSpecialize = false;
  /// Contractions of f32 operands on tensor cores as tf32.
  bool tf32 = false;
  /// With tensor cores: whether split online-softmax reductions take their
  /// products on mma.sync where their shape allows (SplitSoftmaxMma).
  SplitSoftmaxMmaOption splitSoftmaxMma = SplitSoftmaxMmaOption::Auto;
  /// The blocks per multiprocessor split online-softmax reductions' key
  /// splits aim at (0: the kernel's own, getSoftmaxSplits).
  int64_t splitSoftmaxBlocksPerSm = 0;
  /// The tile of portable subgroup matrix kernels (0: none), whether they
  /// take f16 operands, and their subgroup size.
  int64_t matrixUnits = 0;
  bool matrixUnitsF16 = false;
  int64_t subgroupSize = 32;
  /// Whether kernels chosen without a schedule may use subgroup shuffles
  /// and workgroup memory (the CUDA kernel form; the portable backends take
  /// one thread per point): decode attention split over its keys.
  bool cooperative = true;
  /// Why a comprehension that a sum over several indices hid from the
  /// contraction matcher is not a tensor-core contraction even when summed
  /// as one (collapseReductions), by comprehension.
  const llvm::DenseMap<Operation *, std::string> *collapseFailures = nullptr;
};

/// The tensor-core contraction's tiles.
struct MmaConfig {
  int64_t bm = 128, bn = 128, bk = 32, stages = 4, warpsM = 2, warpsN = 2;
  /// wgmma: a warpgroup (4 warps) per 64 rows, each covering all bn
  /// columns; bk is 64 or 32 (one 128- or 64-byte swizzled row of 16-bit
  /// values).
  bool wgmma = false;
  /// wgmma: operands by bulk tensor copies (TMA) on mbarriers, issued by
  /// one thread, instead of cp.async by all.
  bool tma = false;
  /// wgmma + TMA: a producer warpgroup and a persistent grid.
  bool warpSpecialized = false;
  /// Bytes per operand element: 2 (f16, bf16) or 4 (f32 as tf32; bk 32,
  /// one 128-byte row).
  int64_t eb = 2;
  /// Output tiles in groups of `groupM` row tiles, column-major within a
  /// group: blocks running together share operand panels in L2.
  int64_t groupM = 8;
  /// The reduced index split among this many blocks per output tile
  /// (split_k): each sums a run of stepsPerSplit k steps into an f32
  /// workspace, a second kernel adds the runs in order and evaluates the
  /// epilogue. Not with warp specialisation.
  int64_t splitK = 1;
  /// Shared memory a block may use (the target's shared_per_block).
  int64_t maxShared = 0;
  /// Multiprocessors (the target's sm_count).
  int64_t smCount = 0;
  int64_t threads() const { return warpsM * warpsN * 32; }
  /// k steps of bk along a reduced extent `extentK`, and per split (the
  /// last split's run may be shorter).
  int64_t kSteps(int64_t extentK) const {
    return static_cast<int64_t>(llvm::divideCeil(extentK, bk));
  }
  int64_t stepsPerSplit(int64_t extentK) const {
    return static_cast<int64_t>(llvm::divideCeil(kSteps(extentK), splitK));
  }
  /// Whether every one of the splitK runs of `extentK` has a k step.
  bool splitsNonEmpty(int64_t extentK) const {
    return (splitK - 1) * stepsPerSplit(extentK) < kSteps(extentK);
  }
  int64_t ringBytes() const { return stages * (bm + bn) * bk * eb; }
  /// Shared memory of the ring or of the f32 result tile that reuses it
  /// (wgmma's alignment and barriers not counted).
  int64_t sharedBytes() const {
    return std::max(ringBytes(), bm * (bn + 8) * 4);
  }
  /// Elements per 16-byte chunk (one cp.async).
  int64_t vec() const { return 16 / eb; }
  /// Bytes per row of a [.., bk] tile.
  int64_t rowBytes() const { return bk * eb; }
  int64_t tm() const { return bm / warpsM; }
  int64_t tn() const { return bn / warpsN; }
  /// Whether the emitter takes these tiles (bulk copies and warp
  /// specialisation aside: see isMmaBox).
  bool isValid() const;
};

/// The tiles of the SIMT flash and score kernels (SimtScoreKernel.cpp: no
/// tensor cores, the portable backends): a block of `threads` threads, 32
/// along the keys (and the output columns), the rest along the rows; `bm`
/// rows and `bn` keys a block; the dot products staged in f32 workgroup
/// memory in steps of `headStep` along their index, the values (W) in
/// steps of `valueStep` keys.
struct SimtTileConfig {
  int64_t threads = 128, bm = 32, bn = 32, headStep = 16, valueStep = 8;
  int64_t rowThreads() const { return threads / 32; }
  /// Workgroup memory of the tiles for outputs of `cols` columns.
  int64_t sharedBytes(int64_t cols) const;
  /// Empty if the kernel takes these tiles, else why not.
  std::string check(int64_t cols, int64_t maxThreads, int64_t maxShared) const;
};

/// The flash-attention kernel's tiles.
struct FlashConfig {
  /// wgmma: two warpgroups of 64 query rows; else 4 warps of 16.
  bool wgmma = false;
  /// Query rows per block and keys per step.
  int64_t bm = 64, bn = 64;
  /// Slots of the key/value ring.
  int64_t slots = 2;
  /// Keys and values by bulk tensor copies from a producer warpgroup (full
  /// and empty mbarriers per slot instead of a block barrier per step).
  /// The computing warpgroups then overlap their softmax with their
  /// products: each issues S(t) with P(t-1) V(t-1), and the two take turns
  /// issuing (ping-pong on named barriers). FlashKernel.cpp.
  bool tmaKV = false;
  /// With tmaKV: a persistent grid, one block per multiprocessor taking
  /// query tiles bid, bid + grid, ... (with a causal-type mask the tiles
  /// with the most keys first), the producer copying the next tile's keys
  /// and values while the computing warpgroups finish the last.
  bool persistent = false;
  /// No tensor cores (the portable backends): the SIMT kernel's tiles
  /// (SimtScoreKernel.cpp; bm and bn above unused).
  std::optional<SimtTileConfig> simt;
  /// Threads computing (the producer warpgroup not counted).
  int64_t threads() const { return simt ? simt->threads : 2 * bm; }
  /// Shared memory of the tiles (without the barriers).
  int64_t sharedBytes(const FlashMatch &m) const;
  /// With `persistent`: the blocks (at most `smCount`) of `batch` batch
  /// points' query tiles, block b taking tiles b, b + blocks, ... in
  /// batch-major order. With a key limit tiles differ in cost (their key
  /// steps): the count whose static assignment has the least modelled
  /// makespan (129 blocks of 132 for 16 query tiles a batch point: each
  /// block's run goes through every query tile in turn).
  int64_t getPersistentBlocks(const FlashMatch &m, int64_t batch,
                              int64_t smCount) const;
};

/// The score kernel's tiles: 64 rows per block, one warpgroup (wgmma) or 4
/// warps (mma.sync), 64-key steps double buffered. (With wgmma one
/// warpgroup per block beat two, two blocks fitting a multiprocessor;
/// measured: bench/results/2026-12-01-h200-attention-grad.md.)
struct ScoreConfig {
  bool wgmma = false;
  int64_t bm = 64, bn = 64, slots = 2;
  /// No tensor cores: the SIMT kernel's tiles (bm, bn above unused).
  std::optional<SimtTileConfig> simt;
  int64_t threads() const { return simt ? simt->threads : 128; }
};

/// The kernel a comprehension runs as, with what its emitter needs.
struct KernelChoice {
  KernelKind kind = KernelKind::Simt;
  std::optional<FlashMatch> flash;
  FlashConfig flashConfig;
  std::optional<ScoreMatch> score;
  ScoreConfig scoreConfig;
  std::optional<MmaContraction> contraction;
  MmaConfig mma;
  std::optional<SplitSoftmaxMatch> splitSoftmax;
  /// For split_softmax: the blocks the keys are split among (per row).
  int64_t splits = 1;
};

/// Whether the tiles of operand `read` of contraction `c` in `op` (the left
/// one with `isA`) are boxes of its tensor that a bulk tensor copy fills:
/// the column index alone in the last coordinate, the row index plus batch
/// terms in one other, batch indices only elsewhere, and no rows or columns
/// past the reduced index's extent inside the tensor (they must read as
/// zeros).
bool isMmaBox(ComprehensionOp op, const MmaContraction &c, ReadOp read,
              bool isA);

/// Whether the [bn, 64] tiles of flash match `m`'s `read` (keys or values:
/// the key index in one coordinate, `colIndex` plus other terms alone in the
/// last) are boxes of its tensor that a bulk tensor copy fills, zeros past
/// the keys included.
bool isFlashBox(ComprehensionOp op, const FlashMatch &m, ReadOp read,
                Value colIndex, int64_t bn);

/// Chooses `op`'s kernel: with tensor cores, flash attention, a score kernel
/// or a contraction where the matchers take `op`, each with the tiles the
/// heuristics give (a contraction's widths from `op`'s schedule where the
/// emitter takes them); otherwise SIMT (or, with matrix units, an attempt
/// at a subgroup matrix kernel). With `remarks`, a comprehension of 16-bit
/// reads (or any, with tf32) that a tensor-core matcher refuses gets a
/// remark saying why.
KernelChoice chooseKernel(ComprehensionOp op, const KernelOptions &options,
                          bool remarks);

/// Writes `choice` into `op`'s schedule (which must exist): the kernel
/// kind and, for the tensor-core kernels, their tiles, warps, ring and
/// copies (see #tang.schedule). A contraction nested in `op` gets a
/// schedule of its own with the k step.
void setKernelSchedule(ComprehensionOp op, const KernelChoice &choice);

/// The kernel `op`'s schedule asks for (its kernel is not `auto`): the
/// matcher of its kind and the tiles from its fields. An error on `op`
/// where the kernel cannot honour it.
FailureOr<KernelChoice> getScheduledKernel(ComprehensionOp op);

} // namespace mlir::tang

#endif // TANG_ANALYSIS_KERNELCHOICE_H
