//===- KernelChoice.cpp - which kernel, with which parameters ---*- C++ -*-===//
//
// The kernel kinds are tried most specific first (flash attention, score
// kernels, contractions; SIMT takes every comprehension), and each tensor-
// core kernel's tiles are sized here, from the matchers' facts, the
// schedule's tiles and the module's device model (KernelChoice.h).
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/KernelChoice.h"

#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;

TensorCoreKind mlir::tang::resolveTensorCores(TensorCoreOption option,
                                              Operation *module) {
  switch (option) {
  case TensorCoreOption::None:
    return TensorCoreKind::None;
  case TensorCoreOption::MmaSync:
    return TensorCoreKind::MmaSync;
  case TensorCoreOption::Wgmma:
    return TensorCoreKind::Wgmma;
  case TensorCoreOption::Target:
    return getTarget(module).getTensorCores();
  }
  llvm_unreachable("unknown tensor-core option");
}

//===----------------------------------------------------------------------===//
// Configurations
//===----------------------------------------------------------------------===//

bool MmaConfig::isValid() const {
  auto pow2In = [](int64_t v, int64_t lo, int64_t hi) {
    return llvm::isPowerOf2_64(v) && v >= lo && v <= hi;
  };
  if (wgmma)
    return pow2In(bm, 64, 128) && pow2In(bn, 64, 256) &&
           (bk == 32 || (bk == 64 && eb == 2)) && stages >= 3 && stages <= 8 &&
           warpsM == bm / 16 && warpsN == 1 && ringBytes() + 1024 <= maxShared;
  return pow2In(bm, 32, 256) && pow2In(bn, 32, 256) &&
         (bk == 32 || (bk == 64 && eb == 2)) && stages >= 2 && stages <= 8 &&
         pow2In(warpsM, 1, 8) && pow2In(warpsN, 1, 8) && threads() <= 512 &&
         tm() % 16 == 0 && tn() % 16 == 0 &&
         (bm * bk / vec()) % threads() == 0 &&
         (bn * bk / vec()) % threads() == 0 && tm() * tn() / 32 <= 128 &&
         ringBytes() <= maxShared && bm * (bn + 8) * 4 <= maxShared;
}

int64_t FlashConfig::sharedBytes(const FlashMatch &m) const {
  // P stays in registers (the A operand of P V).
  int64_t qBytes = bm * m.dqk * 2;
  int64_t kBytes = slots * bn * m.dqk * 2, vBytes = slots * bn * m.dv * 2;
  // wgmma's swizzled layouts need 1024-byte aligned tiles.
  return qBytes + kBytes + vBytes + (wgmma ? 1024 : 0);
}

int64_t SimtTileConfig::sharedBytes(int64_t cols) const {
  // f32 tiles: a head step of the rows' and the keys' operands
  // ([headStep][rows + 1]), the values ([valueStep][cols]), the scores
  // ([bm][bn + 1]), and per row the rescaling and the sum.
  int64_t words = headStep * (bm + 1) + headStep * (bn + 1) + valueStep * cols +
                  bm * (bn + 1) + 2 * bm;
  return 4 * words;
}

std::string SimtTileConfig::check(int64_t cols, int64_t maxThreads,
                                  int64_t maxShared) const {
  if (threads % 32 || threads < 32 || threads > maxThreads)
    return "its threads are not a multiple of 32 up to " +
           std::to_string(maxThreads);
  if (bm < 1 || bm % rowThreads() || bn < 32 || bn % 32)
    return "its rows are not a multiple of " + std::to_string(rowThreads()) +
           " (its threads along the rows) or its keys of 32";
  // Registers: the scores (two a point with two dot products) and the
  // output columns of a thread.
  int64_t rows = bm / rowThreads();
  if (rows * (bn / 32) > 32 || rows * llvm::divideCeil(cols, 32) > 64)
    return "a thread would hold more than 32 scores or 64 outputs";
  if (headStep < 1 || valueStep < 1 || bn % valueStep)
    return "its steps are not positive or do not divide the keys";
  if (sharedBytes(cols) > maxShared)
    return "its tiles take " + std::to_string(sharedBytes(cols)) +
           " bytes of workgroup memory, more than the target's " +
           std::to_string(maxShared);
  return "";
}

int64_t FlashConfig::getPersistentBlocks(const FlashMatch &m, int64_t batch,
                                         int64_t smCount) const {
  int64_t tilesM = llvm::divideCeil(m.lq, bm), tiles = tilesM * batch;
  if (tiles <= smCount)
    return tiles;
  // A tile's cost in key steps (the kernel's bound: key tiles past its
  // last row + c skipped, the most keys first), plus one for its prologue
  // and epilogue.
  int64_t steps = llvm::divideCeil(m.lk, bn);
  SmallVector<int64_t> cost(tilesM);
  for (int64_t t = 0; t < tilesM; ++t) {
    int64_t row0 = (tilesM - 1 - t) * bm, ub = steps;
    if (m.keyLimit)
      ub = std::min(
          ub,
          std::max<int64_t>(
              llvm::divideFloorSigned(row0 + bm - 1 + *m.keyLimit, bn) + 1, 0));
    cost[t] = ub + 1;
  }
  // Block b takes tiles b, b + g, ... (batch-major: query tile t % tilesM):
  // the g of the least modelled makespan, the larger on a tie.
  int64_t best = smCount, bestSpan = std::numeric_limits<int64_t>::max();
  for (int64_t g = smCount; g >= std::max<int64_t>(1, smCount / 2); --g) {
    int64_t span = 0;
    for (int64_t b = 0; b < g; ++b) {
      int64_t total = 0;
      for (int64_t t = b; t < tiles; t += g)
        total += cost[t % tilesM];
      span = std::max(span, total);
    }
    if (span < bestSpan) {
      best = g;
      bestSpan = span;
    }
  }
  return best;
}

bool mlir::tang::isMmaBox(ComprehensionOp op, const MmaContraction &c,
                          ReadOp read, bool isA) {
  ComprehensionOp red = c.red; // Op handles' accessors are not const.
  Value kIndex = red.getIndex(red.getNumIndices() - 1);
  Value own = op.getIndex(isA ? c.m : c.n);
  bool kContiguous = isA ? c.aKContiguous : c.bKContiguous;
  Value col = kContiguous ? kIndex : own, row = kContiguous ? own : kIndex;
  std::optional<unsigned> rowCoord =
      getBoxRowCoordinate(read, row, col, [&](Value v) {
        for (unsigned p = 0; p < op.getNumParallel(); ++p)
          if (p != c.m && p != c.n && op.getIndex(p) == v)
            return true;
        return false;
      });
  if (!rowCoord)
    return false;
  // Past the reduced index's extent the box must read zeros: its
  // coordinate is k exactly, over the tensor's whole dimension.
  AffineMap map = read.getMap();
  unsigned kCoord = col == kIndex ? map.getNumResults() - 1 : *rowCoord;
  unsigned kPos =
      llvm::find(read.getIndices(), kIndex) - read.getIndices().begin();
  auto t = cast<RankedTensorType>(read.getTensor().getType());
  return map.getResult(kCoord) == getAffineDimExpr(kPos, op.getContext()) &&
         t.getDimSize(kCoord) == c.extentK;
}

bool mlir::tang::isFlashBox(ComprehensionOp op, const FlashMatch &m,
                            ReadOp read, Value colIndex, int64_t bn) {
  std::optional<unsigned> rowCoord =
      getBoxRowCoordinate(read, m.j, colIndex, [&](Value v) {
        for (unsigned p = 0; p < op.getNumParallel(); ++p)
          if (p != m.i && p != m.d && op.getIndex(p) == v)
            return true;
        return false;
      });
  if (!rowCoord)
    return false;
  // Keys past the end must read zeros: no tile reaches past them, or the
  // key coordinate is j exactly and the tensor ends there.
  unsigned jPos =
      llvm::find(read.getIndices(), m.j) - read.getIndices().begin();
  auto t = cast<RankedTensorType>(read.getTensor().getType());
  return m.lk % bn == 0 || (read.getMap().getResult(*rowCoord) ==
                                getAffineDimExpr(jPos, op.getContext()) &&
                            t.getDimSize(*rowCoord) == m.lk);
}

namespace {

int64_t roundUpPow2(int64_t v, int64_t lo, int64_t hi) {
  return std::clamp<int64_t>(llvm::PowerOf2Ceil(std::max<int64_t>(v, 1)), lo,
                             hi);
}

/// The default contraction tiles, sized for the target of `op`'s module.
MmaConfig getDefaultConfig(ComprehensionOp op) {
  TargetAttr target = getTarget(op);
  MmaConfig cfg;
  cfg.maxShared = target.getSharedPerBlock();
  cfg.smCount = target.getSmCount();
  return cfg;
}

/// The wgmma tiles: the schedule's widths where the emitter takes them,
/// else 128 x 128 (64 rows for a short M) and a 4-deep ring.
MmaConfig getWgmmaConfig(ComprehensionOp op, const MmaContraction &c) {
  MmaConfig cfg = getDefaultConfig(op);
  cfg.wgmma = true;
  cfg.bk = 64;
  cfg.bm = c.extentM <= 64 ? 64 : 128;
  cfg.bn = 128;
  if (ScheduleAttr s = op.getScheduleAttr()) {
    MmaConfig want = cfg;
    want.bm = roundUpPow2(s.getTile()[c.m], 64, 128);
    if (c.red == op)
      want.bk = s.getTile().back() <= 32 ? 32 : 64;
    want.bn = roundUpPow2(s.getTile()[c.n], 64, 256);
    want.stages = std::max<int64_t>(3, s.getStages());
    want.warpsM = want.bm / 16;
    want.warpsN = 1;
    if (want.isValid())
      return want;
  }
  cfg.warpsM = cfg.bm / 16;
  cfg.warpsN = 1;
  return cfg;
}

/// The tiles of contraction `c` on mma.sync or (`wgmma`) wgmma.
MmaConfig getTiles(ComprehensionOp op, const MmaContraction &c, bool wgmma) {
  if (c.elementType.isF32()) {
    // tf32: k steps of 32 f32 values (128-byte rows); mma.sync with
    // 128 x 128 tiles, or wgmma with the schedule's widths.
    MmaConfig cfg = wgmma ? getWgmmaConfig(op, c) : getDefaultConfig(op);
    cfg.eb = 4;
    cfg.bk = 32;
    // The schedule sizes f32 products for plain kernels (128 columns);
    // on wgmma, 256 columns where the product still fills every
    // multiprocessor (the 16-bit products' tile: the same bytes a step).
    if (wgmma && c.extentN >= 256 &&
        llvm::divideCeil(c.extentM, cfg.bm) *
                llvm::divideCeil(c.extentN, 256) >=
            static_cast<uint64_t>(cfg.smCount))
      cfg.bn = 256;
    while (!cfg.isValid() && cfg.stages > 3)
      --cfg.stages;
    return cfg;
  }
  if (wgmma)
    return getWgmmaConfig(op, c);
  // The default, with fewer stages where the target's shared memory needs
  // it (the emitter refuses it when even two do not fit).
  MmaConfig cfg = getDefaultConfig(op);
  while (!cfg.isValid() && cfg.stages > 2)
    --cfg.stages;
  ScheduleAttr s = op.getScheduleAttr();
  if (!s)
    return cfg;
  MmaConfig want = cfg;
  want.bm = roundUpPow2(s.getTile()[c.m], 32, 256);
  want.bn = roundUpPow2(s.getTile()[c.n], 32, 256);
  if (c.red == op)
    want.bk = std::clamp<int64_t>(s.getTile().back(), 32, 64);
  want.stages = std::max<int64_t>(2, s.getStages());
  want.warpsM = std::max<int64_t>(1, s.getThreads()[c.m]);
  want.warpsN = std::max<int64_t>(1, s.getThreads()[c.n] / 32);
  return want.isValid() ? want : cfg;
}

/// Split k for a product whose tiles fill at most a quarter of the
/// multiprocessors and whose reduction is long (16 k steps or more): the
/// most splits that keep the blocks within one per multiprocessor, runs of
/// at least 4 steps, and no split without a step (33 x 264 x 4104: 3
/// tiles of 65 steps, 13 splits of 5).
int64_t getSplitK(ComprehensionOp op, const MmaContraction &c,
                  const MmaConfig &cfg) {
  if (cfg.warpSpecialized || cfg.smCount <= 0)
    return 1;
  int64_t tiles = static_cast<int64_t>(llvm::divideCeil(c.extentM, cfg.bm) *
                                       llvm::divideCeil(c.extentN, cfg.bn));
  for (unsigned p = 0; p < op.getNumParallel(); ++p)
    if (p != c.m && p != c.n)
      tiles *= op.getExtent(p);
  int64_t steps = cfg.kSteps(c.extentK);
  if (4 * tiles > cfg.smCount || steps < 16)
    return 1;
  for (int64_t s = std::min<int64_t>(32, cfg.smCount / tiles); s > 1; --s) {
    MmaConfig split = cfg;
    split.splitK = s;
    if (split.stepsPerSplit(c.extentK) >= 4 && split.splitsNonEmpty(c.extentK))
      return s;
  }
  return 1;
}

/// The contraction's whole configuration under `options`.
MmaConfig getMmaConfig(ComprehensionOp op, const MmaContraction &c,
                       const KernelOptions &options) {
  // wgmma's tf32 takes both operands contiguous in k; other tf32 products
  // run on mma.sync.
  bool mmaSyncOnly =
      c.elementType.isF32() && !(c.aKContiguous && c.bKContiguous);
  MmaConfig cfg = getTiles(
      op, c, options.tensorCores == TensorCoreKind::Wgmma && !mmaSyncOnly);
  cfg.tma = options.tma && cfg.wgmma && cfg.rowBytes() == 128 &&
            isMmaBox(op, c, c.a, true) && isMmaBox(op, c, c.b, false);
  // Warp specialisation pays with 256-column tiles; narrower ones (small
  // products) run better as single-role kernels, several blocks per
  // multiprocessor (measured: bench/results/2026-12-01-h200-tensor-cores-
  // ws.md).
  cfg.warpSpecialized = cfg.tma && options.warpSpecialize && cfg.bn >= 256;
  cfg.splitK = getSplitK(op, c, cfg);
  return cfg;
}

/// The flash kernel's configuration under `options`.
FlashConfig getFlashConfig(ComprehensionOp op, const FlashMatch &m,
                           const KernelOptions &options) {
  FlashConfig cfg;
  cfg.wgmma = options.tensorCores == TensorCoreKind::Wgmma;
  // mma.sync: 4 warps of 16 query rows, 64-key steps. wgmma: 2 warpgroups
  // of 64 rows, 128-key steps for head dims up to 128, else 64 (measured:
  // bench/results/2026-12-01-h200-flash-attention.md, and for head dim 64
  // with a producer 2026-12-04-h200-flash-fa3.md).
  int64_t head = std::max(m.dqk, m.dv);
  cfg.bm = cfg.wgmma ? 128 : 64;
  cfg.bn = cfg.wgmma && head <= 128 ? 128 : 64;
  // Keys and values by bulk copies from a producer warpgroup, with the
  // computing warpgroups overlapping softmax and products (ping-pong and
  // within each), for head dims of 64 and more (measured at head 64, L
  // 2048 and 8192: 0.83-0.86x cuDNN on cp.async, 0.75-0.82x with a
  // producer and 64-key steps, 0.84-0.99x with 128-key steps;
  // bench/results/2026-12-04-h200-flash-fa3.md).
  ComprehensionOp red = m.red; // Op handles' accessors are not const.
  cfg.tmaKV = cfg.wgmma && options.tma && head >= 64 &&
              isFlashBox(op, m, m.k, red.getIndex(0), cfg.bn) &&
              isFlashBox(op, m, m.v, op.getIndex(m.d), cfg.bn);
  // The ring: two slots, or with tmaKV as many as fit up to 4 (copies
  // further ahead).
  int64_t most = getTarget(op).getSharedPerBlock();
  int64_t slotBytes = cfg.bn * (m.dqk + m.dv) * 2;
  while (cfg.tmaKV && cfg.slots < 4 &&
         cfg.sharedBytes(m) + slotBytes + 64 <= most)
    ++cfg.slots;
  // With a producer and a causal-type mask, head dims up to 128: a
  // persistent grid (the next tile's keys and values copied while the last
  // tile ends, the tiles' costs balanced over the blocks) unless warp
  // specialisation is off. Measured (H200, against one tile per block):
  // causal L 2048 head 128 +12%, GQA +13%, L 512 +4-6%, L 8192 head 128
  // +2% but head 64 3% slower (kept: one loss of ten); without a mask
  // 1.5-7% slower; head 192 spills, head 256 (64-key steps) 6% slower
  // (bench/results/2026-12-04-h200-session2.md).
  cfg.persistent =
      cfg.tmaKV && options.warpSpecialize && m.keyLimit && head <= 128;
  return cfg;
}

/// The SIMT kernel's tiles for outputs of `cols` columns (no tensor
/// cores), or none when even the smallest do not fit the target's
/// workgroup memory: 128 threads, 32 rows (8 a thread) and 64 keys a block
/// (2 a thread) with the dot products in steps of 8, else 32 keys in steps
/// of 16; the values in the largest step of keys (8 at most) that fits.
/// Under the portable model's 16 KiB: 15.4 KiB at 128 columns. Measured on
/// the H100's Vulkan (causal attention [1, 16, 2048, 128], f16): 64 keys
/// with steps of 8 1.40 ms, 32 keys with steps of 16 1.70 ms (the score
/// phase reads 10 workgroup words per 16 products instead of 9 per 8;
/// bench/results/2026-12-06-h100-portable-2/).
std::optional<SimtTileConfig> getSimtTiles(ComprehensionOp op, int64_t cols) {
  TargetAttr target = getTarget(op);
  SimtTileConfig cfg;
  cfg.threads = std::min<int64_t>(128, target.getMaxThreads());
  for (auto [keys, step] : {std::pair<int64_t, int64_t>{64, 8}, {32, 16}}) {
    cfg.bn = keys;
    cfg.headStep = step;
    for (cfg.valueStep = 8; cfg.valueStep >= 1; cfg.valueStep /= 2)
      for (cfg.bm = 32; cfg.bm >= cfg.rowThreads(); cfg.bm /= 2)
        if (cfg.check(cols, target.getMaxThreads(), target.getSharedPerBlock())
                .empty())
          return cfg;
  }
  return std::nullopt;
}

/// The SIMT tiles a schedule names for `op` (rows `rows`, outputs of
/// `cols` columns; the head step from the first dot product `red`'s own
/// schedule), or the reason they are refused.
FailureOr<SimtTileConfig> getScheduledSimtTiles(ComprehensionOp op,
                                                unsigned rows, int64_t cols,
                                                ComprehensionOp red,
                                                std::string &why) {
  ScheduleAttr s = op.getScheduleAttr();
  unsigned key = op.getNumIndices() - 1;
  SimtTileConfig cfg;
  cfg.bm = s.getTile()[rows];
  cfg.bn = s.getTile()[key];
  cfg.threads = s.getThreads()[rows] * s.getThreads()[key];
  if (ScheduleAttr step = red.getScheduleAttr())
    cfg.headStep = step.getTile().back();
  if (s.getThreads()[key] != 32) {
    why = "32 threads along the keys";
    return failure();
  }
  TargetAttr target = getTarget(op);
  for (cfg.valueStep = 8; cfg.valueStep >= 1; cfg.valueStep /= 2)
    if ((why = cfg.check(cols, target.getMaxThreads(),
                         target.getSharedPerBlock()))
            .empty())
      return cfg;
  why = std::to_string(cfg.bm) + " rows and " + std::to_string(cfg.bn) +
        " keys a block of " + std::to_string(cfg.threads) + " threads: " + why;
  return failure();
}

/// With tensor cores, split online-softmax reduction `m` of `op` takes its
/// products on them unless options.splitSoftmaxMma is Off, where its shape
/// allows it (`remark` says why not when On asked for it). Measured on the
/// H200 (bench_decode, Qwen3-8B shapes, batches 1-16, contexts 1024-8192,
/// bench/results/2026-12-05-h200-decode-splits): mma.sync ran 0.69-0.87x
/// cuDNN against the lane kernel's 0.47-0.65x, faster in every case.
void addSplitSoftmaxMma(ComprehensionOp op, SplitSoftmaxMatch &m,
                        const KernelOptions &options,
                        function_ref<void(const Twine &)> remark) {
  if (options.tensorCores == TensorCoreKind::None ||
      options.splitSoftmaxMma == SplitSoftmaxMmaOption::Off)
    return;
  std::string why;
  m.mma = matchSplitSoftmaxMma(op, m, why);
  // Only a request (On) that cannot be met is worth a remark.
  if (!m.mma && options.splitSoftmaxMma == SplitSoftmaxMmaOption::On)
    remark("split over its keys without tensor cores: " + why);
}

/// Whether `op` reduces with add or softmax_norm over nested reductions
/// (what a score kernel can be).
bool mayBeScore(ComprehensionOp op) {
  bool nestsReductions = llvm::any_of(
      op.getBodyBlock(), [](Operation &o) { return isa<ComprehensionOp>(o); });
  return nestsReductions && (op.getBuiltinMonoid() == MonoidKind::Add ||
                             op.getBuiltinMonoid() == MonoidKind::SoftmaxNorm);
}

} // namespace

KernelChoice mlir::tang::chooseKernel(ComprehensionOp op,
                                      const KernelOptions &options,
                                      bool remarks) {
  KernelChoice choice;
  auto remark = [&](const Twine &why) {
    if (remarks)
      op.emitRemark() << why;
  };
  // Sizes known when the kernel runs: decode attention split over its keys
  // (flash-decoding), else a point kernel (the others are built for static
  // extents).
  if (hasSymbolicSizes(op)) {
    std::string why;
    if (op.getBuiltinMonoid() == MonoidKind::OnlineSoftmax &&
        options.cooperative) {
      if (std::optional<SplitSoftmaxMatch> m = matchSplitSoftmax(op, why)) {
        choice.kind = KernelKind::SplitSoftmax;
        int64_t smCount = getTarget(op).getSmCount();
        addSplitSoftmaxMma(op, *m, options, remark);
        choice.splits =
            getSoftmaxSplits(op, *m, smCount, options.splitSoftmaxBlocksPerSm);
        choice.splitSoftmax = m;
      } else {
        remark("a point kernel, not split over its keys: " + why);
      }
    }
    return choice;
  }
  if (hasPaddedRead(op)) {
    // Matrix-unit and tile kernels load without guards.
    if (classifyComprehension(op) == ShapeClass::MatmulLike)
      remark("a SIMT kernel: it reads with padding");
    return choice;
  }
  if (options.tensorCores == TensorCoreKind::None) {
    // Attention on a target with workgroup barriers (a scheduled one: not
    // the C emulation): the SIMT flash kernel, not a point kernel per
    // output column that recomputes every score.
    if (op.getBuiltinMonoid() == MonoidKind::OnlineSoftmax &&
        op.getScheduleAttr()) {
      std::string why;
      std::optional<FlashMatch> m = matchFlash(op, why, /*tensorCores=*/false);
      std::optional<SimtTileConfig> tiles;
      if (m && (tiles = getSimtTiles(op, m->dv))) {
        choice.kind = KernelKind::Flash;
        choice.flashConfig.simt = tiles;
        choice.flash = std::move(m);
        return choice;
      }
      if (m)
        remark("a point kernel, not a flash kernel: its smallest tiles do "
               "not fit the target's workgroup memory");
    }
    // Sums over keys of dot-product scores (attention's gradients): the
    // SIMT score kernel, each score computed once for all output columns.
    if (mayBeScore(op) && op.getBuiltinMonoid() == MonoidKind::Add &&
        op.getScheduleAttr()) {
      std::string why;
      std::optional<ScoreMatch> m =
          matchScoreReduction(op, why, /*tensorCores=*/false);
      std::optional<SimtTileConfig> tiles;
      if (m && (tiles = getSimtTiles(op, m->dc))) {
        choice.kind = KernelKind::Score;
        choice.scoreConfig.simt = tiles;
        choice.score = std::move(m);
        return choice;
      }
    }
    if (options.matrixUnits &&
        classifyComprehension(op) == ShapeClass::MatmulLike)
      choice.kind = KernelKind::SubgroupMma;
    return choice;
  }
  bool sixteenBit = readsSixteenBitTensors(op);
  if (op.getBuiltinMonoid() == MonoidKind::OnlineSoftmax) {
    std::string why;
    if (std::optional<FlashMatch> m = matchFlash(op, why)) {
      choice.kind = KernelKind::Flash;
      choice.flashConfig = getFlashConfig(op, *m, options);
      choice.flash = std::move(m);
      return choice;
    }
    if (sixteenBit)
      remark("not a flash-attention kernel: " + why);
    // Decode attention over a static context (a capacity, lengths read
    // from a tensor) and any other online-softmax reduction of this form:
    // the split kernel (flash-decoding; one split where the row groups
    // fill the device), not a point kernel per output column.
    std::string splitWhy;
    if (std::optional<SplitSoftmaxMatch> m = matchSplitSoftmax(op, splitWhy);
        m && options.cooperative) {
      int64_t smCount = getTarget(op).getSmCount();
      addSplitSoftmaxMma(op, *m, options, remark);
      choice.kind = KernelKind::SplitSoftmax;
      choice.splits =
          getSoftmaxSplits(op, *m, smCount, options.splitSoftmaxBlocksPerSm);
      choice.splitSoftmax = m;
      return choice;
    }
  }
  if (mayBeScore(op)) {
    std::string why;
    if (std::optional<ScoreMatch> m = matchScoreReduction(op, why)) {
      choice.kind = KernelKind::Score;
      choice.scoreConfig.wgmma = options.tensorCores == TensorCoreKind::Wgmma;
      choice.score = std::move(m);
      return choice;
    }
    if (sixteenBit)
      remark("not a score kernel: " + why);
  }
  // Narrow contractions (matrix-vector) stay on SIMT kernels: they are
  // memory-bound.
  if (classifyComprehension(op) == ShapeClass::MatmulLike) {
    std::string why;
    bool wgmma = options.tensorCores == TensorCoreKind::Wgmma;
    if (std::optional<MmaContraction> c =
            matchMmaContraction(op, why, wgmma, options.tf32)) {
      choice.kind = KernelKind::Contraction;
      choice.mma = getMmaConfig(op, *c, options);
      choice.contraction = std::move(c);
      return choice;
    }
    // Say why a contraction of 16-bit operands (or any, with tf32) stays
    // off the tensor cores.
    if (sixteenBit || options.tf32) {
      if (options.collapseFailures) {
        auto it = options.collapseFailures->find(op);
        if (it != options.collapseFailures->end())
          why = "summed over its reduced indices as one: " + it->second;
      }
      remark("not on tensor cores: " + why);
    }
  }
  return choice;
}

//===----------------------------------------------------------------------===//
// The choice in the schedule
//===----------------------------------------------------------------------===//

namespace {

/// A schedule's fields, to change some of them.
struct ScheduleFields {
  SmallVector<int64_t> tile, threads;
  SmallVector<Mapping> mapping;
  int64_t vector, stages;
  Type storage, accumulate;
  SmallVector<MemoryLevel> memory;
  KernelKind kernel;
  TensorCoreKind mma;
  bool tma, warpSpecialize, persistent;
  int64_t groupM, splitK;

  explicit ScheduleFields(ScheduleAttr s)
      : tile(s.getTile()), threads(s.getThreads()), mapping(s.getMapping()),
        vector(s.getVector()), stages(s.getStages()), storage(s.getStorage()),
        accumulate(s.getAccumulate()), memory(s.getMemory()),
        kernel(s.getKernel()), mma(s.getMma()), tma(s.getTma()),
        warpSpecialize(s.getWarpSpecialize()), persistent(s.getPersistent()),
        groupM(s.getGroupM()), splitK(s.getSplitK()) {}

  /// A tensor-core kernel: `warps` along index `rows`, 32 threads along
  /// `cols` times `colWarps`, a ring of `depth` stages in shared memory.
  void setTensorCores(bool wgmma, unsigned rows, int64_t warps, unsigned cols,
                      int64_t colWarps, int64_t depth) {
    mma = wgmma ? TensorCoreKind::Wgmma : TensorCoreKind::MmaSync;
    threads.assign(threads.size(), 1);
    threads[rows] = warps;
    threads[cols] = 32 * colWarps;
    stages = depth;
    memory.assign(depth, MemoryLevel::Shared);
  }

  ScheduleAttr get(MLIRContext *ctx) const {
    return ScheduleAttr::get(ctx, tile, mapping, threads, vector, stages,
                             storage, accumulate, memory, kernel, mma, tma,
                             warpSpecialize, persistent, groupM, splitK);
  }
};

/// A schedule for a nested reduction of one index: its k step.
ScheduleAttr getStepSchedule(ComprehensionOp red, int64_t step) {
  MLIRContext *ctx = red.getContext();
  SmallVector<int64_t> tile(red.getNumIndices(), 1);
  tile.back() = step;
  SmallVector<Mapping> mapping(red.getNumIndices(), Mapping::Serial);
  SmallVector<int64_t> threads(red.getNumIndices(), 1);
  return ScheduleAttr::get(ctx, tile, mapping, threads, /*vector=*/1,
                           /*stages=*/1, Type(), Float32Type::get(ctx),
                           {MemoryLevel::Global}, KernelKind::Auto,
                           TensorCoreKind::None, false, false, false, 0, 1);
}

/// The SIMT flash or score kernel's tiles in `f` (rows along `rows`, keys
/// along `key`), its head step in the dot product `red`'s schedule.
void setSimtSchedule(ScheduleFields &f, const SimtTileConfig &cfg,
                     unsigned rows, unsigned key, ComprehensionOp red) {
  f.tile[rows] = cfg.bm;
  f.tile[key] = cfg.bn;
  f.mma = TensorCoreKind::None;
  f.threads.assign(f.threads.size(), 1);
  f.threads[rows] = cfg.rowThreads();
  f.threads[key] = 32;
  f.stages = 1;
  f.memory.assign(1, MemoryLevel::Shared);
  red.setScheduleAttr(getStepSchedule(red, cfg.headStep));
}

} // namespace

void mlir::tang::setKernelSchedule(ComprehensionOp op,
                                   const KernelChoice &choice) {
  ScheduleFields f(op.getScheduleAttr());
  f.kernel = choice.kind;
  // A SIMT schedule keeps its split (a column reduction's rows); the
  // tensor-core kernels set their own.
  if (choice.kind != KernelKind::Simt && choice.kind != KernelKind::Auto)
    f.splitK = 1;
  unsigned key = op.getNumIndices() - 1;
  switch (choice.kind) {
  case KernelKind::Auto:
  case KernelKind::Simt:
  case KernelKind::SubgroupMma:
    break;
  case KernelKind::SplitSoftmax:
    // Keys per block (a symbolic key extent takes no schedule).
    if (!op.isSymbolicExtent(key)) {
      f.tile[key] = llvm::divideCeil(op.getExtent(key), choice.splits);
      // The splits over block_x; the grid dimensions the other indices
      // had shift out by one (no two indices on one dimension).
      for (Mapping &m : f.mapping)
        m = m == Mapping::BlockX   ? Mapping::BlockY
            : m == Mapping::BlockY ? Mapping::BlockZ
            : m == Mapping::BlockZ ? Mapping::Serial
                                   : m;
      f.mapping[key] = Mapping::BlockX;
    }
    if (choice.splitSoftmax && choice.splitSoftmax->mma)
      f.mma = TensorCoreKind::MmaSync;
    break;
  case KernelKind::Contraction: {
    const MmaConfig &cfg = choice.mma;
    const MmaContraction &c = *choice.contraction;
    f.tile[c.m] = cfg.bm;
    f.tile[c.n] = cfg.bn;
    f.setTensorCores(cfg.wgmma, c.m, cfg.warpsM, c.n, cfg.warpsN, cfg.stages);
    if (c.red == op)
      f.tile[key] = cfg.bk;
    else
      ComprehensionOp(c.red).setScheduleAttr(getStepSchedule(c.red, cfg.bk));
    f.vector = cfg.vec();
    f.tma = cfg.tma;
    f.warpSpecialize = f.persistent = cfg.warpSpecialized;
    f.groupM = cfg.groupM;
    f.splitK = cfg.splitK;
    break;
  }
  case KernelKind::Flash: {
    const FlashConfig &cfg = choice.flashConfig;
    unsigned rows = choice.flash->i;
    f.tile[rows] = cfg.bm;
    f.tile[key] = cfg.bn;
    if (cfg.simt) {
      setSimtSchedule(f, *cfg.simt, rows, key, choice.flash->red);
      break;
    }
    f.setTensorCores(cfg.wgmma, rows, cfg.bm / 16, key, 1, cfg.slots);
    f.tma = f.warpSpecialize = cfg.tmaKV;
    f.persistent = cfg.persistent;
    break;
  }
  case KernelKind::Score: {
    const ScoreConfig &cfg = choice.scoreConfig;
    unsigned rows = choice.score->x;
    if (cfg.simt) {
      setSimtSchedule(f, *cfg.simt, rows, key, choice.score->dots[0].red);
      break;
    }
    f.tile[rows] = cfg.bm;
    f.tile[key] = cfg.bn;
    f.setTensorCores(cfg.wgmma, rows, cfg.threads() / 32, key, 1, cfg.slots);
    break;
  }
  }
  op.setScheduleAttr(f.get(op.getContext()));
}

/// About 110 lines: one reading per tensor-core kernel kind, each checking
/// every field against what its emitter takes.
FailureOr<KernelChoice> mlir::tang::getScheduledKernel(ComprehensionOp op) {
  ScheduleAttr s = op.getScheduleAttr();
  KernelChoice choice;
  choice.kind = s.getKernel();
  bool wgmma = s.getMma() == TensorCoreKind::Wgmma;
  unsigned key = op.getNumIndices() - 1;
  ArrayRef<int64_t> tile = s.getTile(), threads = s.getThreads();
  auto refuse = [&](const Twine &why) {
    return op.emitOpError()
           << "has a schedule asking for a "
           << stringifyKernelKind(s.getKernel()) << " kernel, but " << why;
  };
  if (tile.size() != op.getNumIndices())
    return refuse("its tile has " + Twine(tile.size()) + " sizes for " +
                  Twine(op.getNumIndices()) + " indices");
  int64_t maxShared = getTarget(op).getSharedPerBlock();
  // The tensor-core instructions must be the target's (wgmma on sm_90a,
  // mma.sync from sm_80 on).
  TensorCoreKind has = getTarget(op).getTensorCores();
  if ((s.getMma() == TensorCoreKind::Wgmma && has != TensorCoreKind::Wgmma) ||
      (s.getMma() == TensorCoreKind::MmaSync && has == TensorCoreKind::None))
    return refuse("its mma is " + stringifyTensorCoreKind(s.getMma()) +
                  ", which " + getTarget(op).getChip() + " does not have");
  if (choice.kind != KernelKind::Auto && choice.kind != KernelKind::Simt &&
      hasPaddedRead(op))
    return refuse("it reads with padding, which only SIMT kernels guard");
  switch (choice.kind) {
  case KernelKind::Auto:
  case KernelKind::Simt:
  case KernelKind::SubgroupMma:
    return choice;
  case KernelKind::SplitSoftmax: {
    std::string why;
    std::optional<SplitSoftmaxMatch> m = matchSplitSoftmax(op, why);
    if (!m)
      return refuse(why);
    unsigned key = op.getNumParallel();
    if (op.isSymbolicExtent(key))
      return refuse("its key extent is symbolic (split_softmax kernels of "
                    "symbolic sizes take no schedule)");
    choice.splits = llvm::divideCeil(op.getExtent(key), tile[key]);
    // Products on tensor cores when the schedule asks for mma.sync.
    if (s.getMma() == TensorCoreKind::Wgmma)
      return refuse("wgmma (split_softmax kernels take mma.sync)");
    if (s.getMma() == TensorCoreKind::MmaSync) {
      m->mma = matchSplitSoftmaxMma(op, *m, why);
      if (!m->mma)
        return refuse("its products on tensor cores: " + why);
    }
    choice.splitSoftmax = m;
    return choice;
  }
  case KernelKind::Contraction: {
    std::string why;
    std::optional<MmaContraction> c =
        matchMmaContraction(op, why, wgmma, /*allowTf32=*/true);
    if (!c)
      return refuse("it is not a tensor-core contraction: " + why);
    MmaConfig cfg = getDefaultConfig(op);
    cfg.wgmma = wgmma;
    cfg.eb = c->elementType.isF32() ? 4 : 2;
    cfg.bm = tile[c->m];
    cfg.bn = tile[c->n];
    if (c->red == op) {
      cfg.bk = tile[key];
    } else {
      ScheduleAttr step = c->red.getScheduleAttr();
      if (!step)
        return refuse("its nested reduction has no schedule with the k step");
      cfg.bk = step.getTile().back();
    }
    cfg.stages = s.getStages();
    cfg.warpsM = threads[c->m];
    cfg.warpsN = threads[c->n] / 32;
    cfg.tma = s.getTma();
    cfg.warpSpecialized = s.getWarpSpecialize();
    cfg.groupM = s.getGroupM();
    MmaConfig unbounded = cfg;
    unbounded.maxShared = std::numeric_limits<int64_t>::max() / 2;
    if (!cfg.isValid() && unbounded.isValid() && threads[c->n] % 32 == 0)
      return op.emitOpError()
             << "tensor-core kernel: " << cfg.sharedBytes()
             << " bytes of shared memory for its tiles, more than the "
             << maxShared << " a block may have on " << getTarget(op).getChip();
    if (!cfg.isValid() || threads[c->n] % 32)
      return refuse("the emitter does not take " + Twine(cfg.bm) + " x " +
                    Twine(cfg.bn) + " x " + Twine(cfg.bk) + " tiles of " +
                    Twine(cfg.warpsM) + " x " + Twine(cfg.warpsN) +
                    " warps in a ring of " + Twine(cfg.stages) + " (" +
                    Twine(cfg.ringBytes()) + " bytes; at most " +
                    Twine(maxShared) + " on " + getTarget(op).getChip() + ")");
    if (wgmma && cfg.eb == 4 && !(c->aKContiguous && c->bKContiguous))
      return refuse("wgmma takes tf32 operands contiguous in k only");
    if (cfg.tma && (cfg.rowBytes() != 128 || !isMmaBox(op, *c, c->a, true) ||
                    !isMmaBox(op, *c, c->b, false)))
      return refuse("bulk tensor copies need 128-byte k steps and operands "
                    "whose tiles are boxes of their tensors");
    if (cfg.warpSpecialized != s.getPersistent() ||
        (cfg.warpSpecialized && !cfg.tma))
      return refuse("the contraction is warp-specialised exactly when "
                    "persistent, and only with bulk tensor copies");
    if (s.getVector() != cfg.vec())
      return refuse("its operands move " + Twine(cfg.vec()) +
                    " elements (16 bytes) at a time, not " +
                    Twine(s.getVector()));
    cfg.splitK = s.getSplitK();
    if (cfg.splitK > 1 && !cfg.splitsNonEmpty(c->extentK))
      return refuse("split_k = " + Twine(cfg.splitK) + " leaves a split of " +
                    Twine(cfg.kSteps(c->extentK)) + " k steps of " +
                    Twine(cfg.bk) + " (" +
                    Twine(cfg.stepsPerSplit(c->extentK)) +
                    " a split) without a step");
    choice.mma = cfg;
    choice.contraction = std::move(c);
    return choice;
  }
  case KernelKind::Flash: {
    std::string why;
    bool simt = s.getMma() == TensorCoreKind::None;
    std::optional<FlashMatch> m = matchFlash(op, why, !simt);
    if (!m)
      return refuse("it is not attention: " + why);
    FlashConfig cfg;
    if (simt) {
      FailureOr<SimtTileConfig> tiles =
          getScheduledSimtTiles(op, m->i, m->dv, m->red, why);
      if (failed(tiles))
        return refuse("the SIMT flash kernel takes " + why);
      cfg.simt = *tiles;
      choice.flashConfig = cfg;
      choice.flash = std::move(m);
      return choice;
    }
    cfg.wgmma = wgmma;
    cfg.bm = tile[m->i];
    cfg.bn = tile[key];
    cfg.slots = s.getStages();
    cfg.tmaKV = s.getTma();
    bool tiles = wgmma ? cfg.bm == 128 && (cfg.bn == 64 || cfg.bn == 128)
                       : cfg.bm == 64 && cfg.bn == 64;
    if (!tiles || threads[m->i] != cfg.bm / 16 || threads[key] != 32)
      return refuse(Twine("the ") + (wgmma ? "wgmma" : "mma.sync") +
                    " kernel takes " +
                    (wgmma ? "128 query rows (8 warps) and 64 or 128 keys"
                           : "64 query rows (4 warps) and 64 keys") +
                    " per block, 32 threads along the keys");
    if (cfg.slots < 2 || cfg.slots > (cfg.tmaKV ? 4 : 2))
      return refuse("its ring has 2 slots (2 to 4 with bulk tensor copies)");
    cfg.persistent = s.getPersistent();
    if (cfg.tmaKV != s.getWarpSpecialize() || (cfg.persistent && !cfg.tmaKV))
      return refuse("bulk tensor copies come from a producer warpgroup "
                    "(warp_specialize), and only then may the grid be "
                    "persistent");
    if (cfg.tmaKV && (!isFlashBox(op, *m, m->k, m->red.getIndex(0), cfg.bn) ||
                      !isFlashBox(op, *m, m->v, op.getIndex(m->d), cfg.bn)))
      return refuse("the keys' and values' tiles are not boxes of their "
                    "tensors for bulk tensor copies");
    choice.flashConfig = cfg;
    choice.flash = std::move(m);
    return choice;
  }
  case KernelKind::Score: {
    std::string why;
    bool simt = s.getMma() == TensorCoreKind::None;
    std::optional<ScoreMatch> m = matchScoreReduction(op, why, !simt);
    if (!m)
      return refuse("it is not a sum over keys of dot-product scores: " + why);
    ScoreConfig cfg;
    if (simt) {
      if (m->monoid != MonoidKind::Add)
        return refuse("the SIMT score kernel takes add reductions");
      FailureOr<SimtTileConfig> tiles =
          getScheduledSimtTiles(op, m->x, m->dc, m->dots[0].red, why);
      if (failed(tiles))
        return refuse("the SIMT score kernel takes " + why);
      cfg.simt = *tiles;
      choice.scoreConfig = cfg;
      choice.score = std::move(m);
      return choice;
    }
    cfg.wgmma = wgmma;
    if (tile[m->x] != cfg.bm || tile[key] != cfg.bn ||
        threads[m->x] != cfg.threads() / 32 || threads[key] != 32 ||
        s.getStages() != cfg.slots || s.getTma() || s.getWarpSpecialize() ||
        s.getPersistent())
      return refuse("the score kernel takes 64 rows (4 warps) and 64 keys "
                    "per block, 32 threads along the keys, 2 stages, no bulk "
                    "copies");
    choice.scoreConfig = cfg;
    choice.score = std::move(m);
    return choice;
  }
  }
  llvm_unreachable("unknown kernel kind");
}
