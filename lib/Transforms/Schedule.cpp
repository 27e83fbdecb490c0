//===- Schedule.cpp - heuristic schedules by shape class --------*- C++ -*-===//
//
// --tang-schedule gives every function-level comprehension without a
// schedule one from a heuristic keyed on its shape class. The heuristics
// follow what fast hand-written kernels do for each class:
//
//  * pointwise: 16-byte vectors along the innermost index, 256 threads per
//    block, the other indices over the grid;
//  * row reduction: a block per row, its threads striding the row 16 bytes
//    at a time, reductions combined across the block;
//  * narrow matrix-vector (a product over a weight row per output, or a map
//    whose body holds such products: an epilogue fused after them): a warp
//    per output, 4 per block, its lanes striding the reduction 16 bytes of
//    the weights at a time, the rows of a small batch together in the warp
//    so that each weight vector is loaded once (other narrow products take
//    the row schedule);
//  * column reduction: a warp-wide strip of columns per block, threads
//    striding the reduced rows;
//  * matmul-like: 128x128 output tiles, 32-deep reduction steps staged
//    through shared memory; for 16-bit operands (tensor cores) 4 warps in a
//    2 x 2 grid and 4 stages, else 256 threads;
//  * online softmax: a 64-query tile per block, 64-key steps staged through
//    shared memory, the head dimension whole.
//
// With tensor-core options, each schedule then names its kernel and all its
// parameters (chooseKernel, setKernelSchedule: Tang/Analysis/KernelChoice.h).
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/KernelChoice.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Analysis/TrafficBound.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "Tang/Transforms/CollapseReductions.h"
#include "Tang/Transforms/Passes.h"
#include "Tang/Transforms/ScheduleTuning.h"

#include "mlir/AsmParser/AsmParser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGSCHEDULE
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-schedule"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The device facts the heuristics are sized by, and where matmul-like
/// output tiles come from (tile-source).
struct DeviceFacts {
  int64_t smCount, sharedMemory, warpSize, maxThreads;
  bool trafficTiles = false;
  /// The widest access one thread makes, in bytes (the target's).
  int64_t vectorBytes = 16;
  /// Whether the target has tensor cores (16-bit products go there).
  bool tensorCores = true;
  /// The most elements one access takes (0: no limit): the portable
  /// languages' vectors have at most 4 components (SPIR-V without the
  /// Vector16 capability, GLSL, WGSL, Metal), and of 16 or 32 bits
  /// (upstream's SPIR-V lowering loads no vector of 8-bit elements).
  int64_t maxVectorElements = 0;
  /// Whether f32 products go to tensor cores as tf32 (--tang-schedule's
  /// tf32).
  bool tf32 = false;
};

/// `v` elements of `bytes` each an access, within the device's limits.
int64_t capVector(int64_t v, int64_t bytes, const DeviceFacts &dev) {
  if (!dev.maxVectorElements)
    return v;
  return bytes < 2 ? 1 : std::min(v, dev.maxVectorElements);
}

/// The certified tile of `op`'s traffic bound at shared memory (capacity:
/// `bytes` over the element size), or none when the LP cannot express `op`.
std::optional<SmallVector<int64_t>> getTrafficTile(ComprehensionOp op,
                                                   int64_t bytes) {
  std::string why;
  FailureOr<LoopNest> nest = getLoopNest(op, why);
  if (failed(nest))
    return std::nullopt;
  FailureOr<TrafficBound> bound = computeTrafficBound(
      *nest, bytes / std::max<int64_t>(1, nest->elementBytes), why);
  if (failed(bound))
    return std::nullopt;
  return bound->tile;
}

/// The most blocks along grid z (CUDA's limit; the portable APIs
/// guarantee 65535 per dimension too).
constexpr int64_t kMaxGridZ = 65535;

/// The largest power of two <= n (n >= 1).
int64_t floorPow2(int64_t n) { return int64_t(1) << llvm::Log2_64(n); }

/// Builds a schedule index by index.
class ScheduleBuilder {
public:
  ScheduleBuilder(ComprehensionOp op)
      : op(op), tile(op.getNumIndices(), 1),
        mapping(op.getNumIndices(), Mapping::Serial),
        threads(op.getNumIndices(), 1) {
    // Serial over the whole extent by default (a symbolic extent has no
    // whole tile: its schedule must spread it).
    for (unsigned i = 0; i < op.getNumIndices(); ++i)
      tile[i] = op.isSymbolicExtent(i) ? 1 : op.getExtent(i);
  }

  /// Index `i`'s tiles go over grid dimension `m`.
  void spread(unsigned i, int64_t t, Mapping m) {
    tile[i] = op.isSymbolicExtent(i) ? t : std::min(t, op.getExtent(i));
    mapping[i] = m;
  }
  /// The block covers index `i` whole, `n` threads striding it.
  void share(unsigned i, int64_t n) {
    tile[i] = op.getExtent(i);
    threads[i] = std::max<int64_t>(1, std::min(n, tile[i]));
  }
  void setThreads(unsigned i, int64_t n) {
    threads[i] = std::max<int64_t>(1, std::min(n, tile[i]));
  }
  /// `n` threads for index `i`'s tile, several per element when `n` is
  /// larger (they share the element's reductions).
  void setCooperatingThreads(unsigned i, int64_t n) { threads[i] = n; }

  /// Spreads the parallel indices in `indices` (innermost last) over the
  /// grid one element per block: block_x, block_y, block_z from the inside
  /// out; outer ones beyond three stay whole in the block.
  void spreadOverGrid(ArrayRef<unsigned> indices,
                      Mapping first = Mapping::BlockX) {
    static constexpr Mapping kGrid[] = {Mapping::BlockX, Mapping::BlockY,
                                        Mapping::BlockZ};
    unsigned g = first == Mapping::BlockX   ? 0
                 : first == Mapping::BlockY ? 1
                                            : 2;
    for (unsigned i : llvm::reverse(indices)) {
      if (g == 3)
        break;
      spread(i, 1, kGrid[g++]);
    }
  }

  ScheduleAttr build(int64_t vector, int64_t stages,
                     ArrayRef<MemoryLevel> memory) {
    Type storage = getStorage();
    Type accumulate = getAccumulate(storage);
    return ScheduleAttr::get(op.getContext(), tile, mapping, threads, vector,
                             stages, storage, accumulate, memory,
                             KernelKind::Auto, TensorCoreKind::None,
                             /*tma=*/false, /*warpSpecialize=*/false,
                             /*persistent=*/false, /*groupM=*/0, splitK);
  }

  /// Blocks the reduced indices are split among (a column reduction's
  /// rows).
  int64_t splitK = 1;

  Type getStorage() {
    Type t = op.getResultTypes().front();
    return cast<RankedTensorType>(t).getElementType();
  }

private:
  static Type getAccumulate(Type storage) {
    MLIRContext *ctx = storage.getContext();
    if (storage.isF64())
      return Float64Type::get(ctx);
    if (isa<FloatType>(storage))
      return Float32Type::get(ctx);
    return IntegerType::get(ctx, 32);
  }

  ComprehensionOp op;
  SmallVector<int64_t> tile;
  SmallVector<Mapping> mapping;
  SmallVector<int64_t> threads;
};

/// Elements of `t` per access of the device's widest (16 bytes on the
/// NVIDIA chips, at least one element), reduced until it divides `extent`.
int64_t getVectorWidth(Type t, int64_t extent, const DeviceFacts &dev) {
  int64_t bytes = std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
  int64_t v =
      capVector(std::max<int64_t>(1, dev.vectorBytes / bytes), bytes, dev);
  while (v > 1 && extent % v != 0)
    v /= 2;
  return v;
}

/// Outputs (warps) per block of a matrix-vector kernel: 4 warps of 32
/// lanes, so that a batch-1 product of 4096 outputs keeps 1024 blocks (8 per
/// multiprocessor of an H200) each with a 16-byte load per lane in flight
/// per step.
constexpr int64_t kMatVecWarps = 4;
/// Rows of the batch a warp computes itself (sharing each weight vector);
/// more go one per block.
constexpr int64_t kMatVecRows = 16;

/// Whether the weights of a matrix-vector comprehension `op` (the reads
/// and gathers of its `reductions` that use its output index) change with
/// its parallel index `i`: through a coordinate, or through a gather's data
/// (an expert chosen per token).
bool weightsVaryWith(ComprehensionOp op, ArrayRef<ComprehensionOp> reductions,
                     unsigned i) {
  Value n = op.getIndex(op.getNumParallel() - 1), index = op.getIndex(i);
  bool varies = false;
  for (ComprehensionOp red : reductions)
    red.walk([&](Operation *access) {
      if (isa<ReadOp, GatherOp>(access) && accessUses(access, n))
        varies |= accessUses(access, index, &op.getBodyBlock());
    });
  return varies;
}

/// A narrow matrix-vector product (isMatVecForm): a warp per output `n`
/// (the last parallel index), kMatVecWarps consecutive ones per block over
/// block_x; the lanes stride the reductions 16 bytes of the weights at a
/// time; the batch whole in the warp (up to kMatVecRows rows), else a row
/// per block over block_y; a row index the weights vary with (an expert
/// per token) one per block.
ScheduleAttr scheduleMatVec(ComprehensionOp op, ScheduleBuilder &b) {
  unsigned np = op.getNumParallel(), n = np - 1;
  // The vector: 16 bytes of the narrowest tensor read along the
  // reductions' index (the weights), dividing every reduction's extent.
  int64_t bytes = 8;
  SmallVector<ComprehensionOp> reductions;
  if (op.getNumReduced())
    reductions.push_back(op);
  for (Operation &inner : op.getBodyBlock())
    if (auto red = dyn_cast<ComprehensionOp>(inner))
      reductions.push_back(red);
  for (ComprehensionOp red : reductions)
    red.walk([&](Operation *access) {
      if (!isa<ReadOp, GatherOp>(access))
        return;
      Value tensor = getAccessedTensor(access);
      Type e = cast<RankedTensorType>(tensor.getType()).getElementType();
      bytes = std::min<int64_t>(
          bytes, std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8));
    });
  int64_t v = 16 / bytes;
  for (ComprehensionOp red : reductions)
    while (v > 1 && red.getExtent(red.getNumIndices() - 1) % v != 0)
      v /= 2;
  int64_t warps = op.isSymbolicExtent(n)
                      ? kMatVecWarps
                      : std::min<int64_t>(kMatVecWarps, op.getExtent(n));
  b.spread(n, warps, Mapping::BlockX);
  if (op.getNumReduced()) {
    b.setThreads(n, warps);
    b.share(np, 32);
  } else {
    b.setCooperatingThreads(n, 32 * warps);
  }
  // A row index the weights vary with (a batch of matrices, an expert
  // picked per row by data) shares no weight vector: one per block.
  SmallVector<unsigned> own;
  int64_t rows = 1;
  for (unsigned i = 0; i < n; ++i) {
    if (weightsVaryWith(op, reductions, i))
      own.push_back(i);
    else
      rows *= op.getExtent(i);
  }
  if (rows > kMatVecRows || own.size() > 2)
    b.spreadOverGrid(llvm::to_vector(llvm::seq(0u, n)), Mapping::BlockY);
  else
    b.spreadOverGrid(own, Mapping::BlockY);
  return b.build(v, 1, {MemoryLevel::Global});
}

/// For a reduction over one index (the last) of at most one parallel
/// index whose rows are too few to fill the device and long: the elements
/// per block of a row split among blocks (a multiple of `step`, the
/// elements one pass of the block's threads reads), else 0. Every block
/// then takes at least 4 passes; the rows and splits make about four
/// blocks per multiprocessor.
int64_t getSplitRowChunk(ComprehensionOp op, int64_t step,
                         const DeviceFacts &dev) {
  constexpr int64_t kMinPasses = 4;
  unsigned np = op.getNumParallel();
  if (op.getNumReduced() != 1 || np > 1 || dev.warpSize != 32)
    return 0;
  // Builtin monoids (commutative) over 32-bit values: the blocks' carriers
  // go through 32-bit shuffles and an f32 scratch buffer in any order (a
  // user monoid keeps the row kernel, which combines in index order).
  if (!op.getBuiltinMonoid() || !llvm::all_of(op.getResultTypes(), [](Type t) {
        Type e = cast<RankedTensorType>(t).getElementType();
        return e.isF32() || e.isF16() || e.isBF16() || e.isInteger(32);
      }))
    return 0;
  bool nested = false;
  op.getBodyBlock().walk([&](ComprehensionOp) { nested = true; });
  if (nested)
    return 0;
  int64_t rows = np ? op.getExtent(0) : 1;
  int64_t extent = op.getExtent(np);
  int64_t blocks = 4 * std::max<int64_t>(dev.smCount, 1);
  if (rows * 2 > blocks || rows > 65535 || extent < 2 * kMinPasses * step)
    return 0;
  int64_t splits = std::min<int64_t>(llvm::divideCeil(blocks, rows),
                                     extent / (kMinPasses * step));
  if (splits < 2)
    return 0;
  return static_cast<int64_t>(
      llvm::alignTo(llvm::divideCeil(extent, splits), step));
}

/// A column reduction's column kernel (ColumnKernel.cpp): strips of 32 v
/// columns (a warp's lanes, v each) over block_x, the other parallel
/// indices one point a block over block_z (at most 65535 points), 8 warps
/// a block each on a run of the rows
/// (the reduced indices, row-major), the rows split among blocks along
/// block_y until the grid holds two blocks a multiprocessor, each warp's
/// run at least 16 rows. None for symbolic sizes, nested reductions or
/// fewer than 32 columns.
std::optional<ScheduleAttr> scheduleColumns(ComprehensionOp op,
                                            ScheduleBuilder &b, int64_t v,
                                            const DeviceFacts &dev) {
  constexpr int64_t kWarps = 8, kMinWarpRows = 16;
  unsigned np = op.getNumParallel(), last = op.getNumIndices() - 1;
  if (np < 1 || !op.getNumReduced() || hasSymbolicSizes(op) ||
      dev.warpSize != 32 ||
      llvm::any_of(
          op.getBodyBlock(),
          [](Operation &o) { return isa<ComprehensionOp>(o); }))
    return std::nullopt;
  int64_t columns = op.getExtent(np - 1);
  // The other parallel indices one point a block on block_z.
  int64_t outer = 1;
  for (unsigned i = 0; i + 1 < np; ++i)
    outer *= op.getExtent(i);
  if (columns < 32 || outer > kMaxGridZ)
    return std::nullopt;
  while (v > 1 && (32 * v > columns || columns % v))
    v /= 2;
  b.spread(np - 1, 32 * v, Mapping::BlockX);
  b.setThreads(np - 1, 32);
  for (unsigned i = 0; i + 1 < np; ++i)
    b.spread(i, 1, Mapping::BlockZ);
  int64_t rows = 1;
  for (unsigned i = np; i <= last; ++i)
    rows *= op.getExtent(i);
  b.setThreads(last, kWarps);
  int64_t blocks = llvm::divideCeil(columns, 32 * v) * outer;
  int64_t want =
      llvm::divideCeil(2 * std::max<int64_t>(dev.smCount, 1), blocks);
  b.splitK = std::clamp<int64_t>(std::min(want, rows / (kWarps * kMinWarpRows)),
                                 1, 65535);
  return b.build(v, 1, {MemoryLevel::Global});
}

ScheduleAttr scheduleFor(ComprehensionOp op, ShapeClass cls,
                         const DeviceFacts &dev) {
  ScheduleBuilder b(op);
  unsigned np = op.getNumParallel(), n = op.getNumIndices();
  SmallVector<unsigned> parallel = llvm::to_vector(llvm::seq(0u, np));
  Type storage = b.getStorage();
  MLIRContext *ctx = op.getContext();
  auto roundToWarps = [&](int64_t t) {
    t = floorPow2(std::max<int64_t>(1, t));
    return std::min(dev.maxThreads, std::max(t, dev.warpSize));
  };

  if (cls == ShapeClass::NarrowMatVec && dev.warpSize == 32 && isMatVecForm(op))
    return scheduleMatVec(op, b);

  switch (cls) {
  case ShapeClass::Pointwise: {
    if (np == 0)
      return b.build(1, 1, {MemoryLevel::Global});
    unsigned inner = np - 1;
    int64_t v = getVectorWidth(storage, op.getExtent(inner), dev);
    int64_t t = roundToWarps(std::min<int64_t>(256, op.getExtent(inner) / v));
    b.spread(inner, t * v, Mapping::BlockX);
    b.setThreads(inner, t);
    b.spreadOverGrid(ArrayRef(parallel).drop_back(), Mapping::BlockY);
    return b.build(v, 1, {MemoryLevel::Global});
  }
  case ShapeClass::RowReduction:
  case ShapeClass::NarrowMatVec: {
    if (std::optional<RowlessWork> work = getRowlessWork(op)) {
      // No row: the body's long reductions read along the last index (a
      // logsumexp per row of a vocabulary). Every index one per block, the
      // block's threads sharing the nested reductions (RowKernel.cpp).
      // work->vector elements make 16 bytes of the narrowest read: scaled
      // to the device's widest access (powers of two: still a divisor).
      // The narrowest read's elements: 16 / work->vector bytes.
      int64_t v =
          capVector(std::max<int64_t>(1, work->vector * dev.vectorBytes / 16),
                    16 / std::max<int64_t>(1, work->vector), dev);
      int64_t t = roundToWarps(std::min<int64_t>(
          std::min<int64_t>(256, dev.maxThreads / 2), work->length / v));
      b.spreadOverGrid(parallel);
      b.setCooperatingThreads(n - 1, t);
      return b.build(v, 1, {MemoryLevel::Global});
    }
    // The row: the last index (reduced if the comprehension reduces).
    unsigned row = n - 1;
    int64_t v = getVectorWidth(storage, op.getExtent(row), dev);
    // 256 threads per row suit norms, 128 matrix-vector rows (more rows
    // resident per multiprocessor; measured: bench/results/2026-11-30-h200-
    // memory-bound-vectorized.md).
    int64_t cap = cls == ShapeClass::NarrowMatVec ? 128 : 256;
    int64_t t = roundToWarps(std::min<int64_t>(
        std::min(cap, dev.maxThreads / 2), op.getExtent(row) / v));
    if (int64_t chunk = getSplitRowChunk(op, t * v, dev)) {
      // Few long rows (an argmax over a vocabulary, a sum of everything):
      // the row split among blocks along block_x, the rows over block_y.
      b.spread(row, chunk, Mapping::BlockX);
      b.setThreads(row, t);
      if (np)
        b.spread(0, 1, Mapping::BlockY);
      return b.build(v, 1, {MemoryLevel::Global});
    }
    b.share(row, t);
    SmallVector<unsigned> rows(parallel);
    if (!rows.empty() && rows.back() == row)
      rows.pop_back();
    b.spreadOverGrid(rows);
    return b.build(v, 1, {MemoryLevel::Global});
  }
  case ShapeClass::ColumnReduction: {
    unsigned inner = np ? np - 1 : 0;
    int64_t v = np ? getVectorWidth(storage, op.getExtent(inner), dev) : 1;
    if (std::optional<ScheduleAttr> s = scheduleColumns(op, b, v, dev))
      return *s;
    if (np) {
      b.spread(inner, dev.warpSize * v, Mapping::BlockX);
      b.setThreads(inner, dev.warpSize);
      b.spreadOverGrid(ArrayRef(parallel).drop_back(), Mapping::BlockY);
    }
    if (op.getNumReduced())
      b.share(n - 1, dev.maxThreads / dev.warpSize);
    return b.build(v, 1, {MemoryLevel::Global});
  }
  case ShapeClass::MatmulLike: {
    if (np < 2)
      return b.build(1, 1, {MemoryLevel::Global});
    unsigned j = np - 1, i = np - 2;
    // 16-bit operands go to tensor cores: 128 x 256 tiles, 64-deep steps,
    // a 4-deep ring and 8 warps (faster than 128 x 128 tiles and 3-stage
    // rings; measured: bench/results/2026-12-01-h200-gemm-wgmma.md).
    // SIMT products (every product on a target without tensor cores, f32
    // ones without tf32 on a target with them): 64 x 64 tiles of 16 x 16
    // threads, 4 x 4 points a thread (the register-tiled kernel,
    // TiledKernel.cpp). With tf32, f32 products keep 128 x 128, which
    // tf32's wgmma tiles follow.
    // Tensor cores where the contraction's operands are 16-bit reads the
    // tensor-core kernels take (a product of other 16-bit reads, such as
    // a factor computed from them, is SIMT).
    std::string why;
    bool tensorCores = dev.tensorCores && readsSixteenBitTensors(op) &&
                       matchMmaContraction(op, why, /*allowTransposedA=*/true,
                                           /*allowTf32=*/false);
    bool simt = !tensorCores && !(dev.tensorCores && dev.tf32);
    int64_t most = simt ? 64 : 128;
    int64_t tm = floorPow2(std::min<int64_t>(most, op.getExtent(i)));
    int64_t tn =
        floorPow2(std::min<int64_t>(tensorCores ? 256 : most, op.getExtent(j)));
    // Small products: narrower tiles (down to 64 x 64) until every
    // multiprocessor has a tile (1000^3 in 128 x 256 tiles fills 32 of an
    // H200's 132).
    int64_t batch = 1;
    for (unsigned p = 0; p + 2 < np; ++p)
      batch *= op.getExtent(p);
    auto tiles = [&] {
      return batch *
             static_cast<int64_t>(llvm::divideCeil(op.getExtent(i), tm) *
                                  llvm::divideCeil(op.getExtent(j), tn));
    };
    while (tensorCores && tiles() < dev.smCount && tn > 64)
      tn /= 2;
    while (tensorCores && tiles() < dev.smCount && tm > 64)
      tm /= 2;
    // tile-source=traffic-bound: the output tile is the traffic bound's
    // (the LP's certified tile at shared memory), rounded down to powers
    // of two within what the kernels take (the tensor-core kernels round
    // again to their own sizes); no adjustment for filling the device.
    std::optional<SmallVector<int64_t>> lp;
    if (dev.trafficTiles && (lp = getTrafficTile(op, dev.sharedMemory))) {
      op->setAttr(kTrafficTileAttrName, DenseI64ArrayAttr::get(ctx, *lp));
      auto clip = [&](int64_t t, int64_t most, unsigned index) {
        return floorPow2(
            std::clamp<int64_t>(t, 1, std::min(most, op.getExtent(index))));
      };
      tm = clip((*lp)[i], most, i);
      tn = clip((*lp)[j], tensorCores ? 256 : most, j);
    }
    b.spread(j, tn, Mapping::BlockX);
    b.spread(i, tm, Mapping::BlockY);
    b.setThreads(j, tensorCores ? 128 : std::min<int64_t>(16, tn));
    b.setThreads(i, tensorCores ? 2 : std::min<int64_t>(16, tm));
    // The batch indices, one point a block, all over block_z (the product
    // kernels take their product as one grid dimension).
    if (batch <= kMaxGridZ)
      for (unsigned p = 0; p + 2 < np; ++p)
        b.spread(p, 1, Mapping::BlockZ);
    else
      b.spreadOverGrid(ArrayRef(parallel).drop_back(2), Mapping::BlockZ);
    int64_t tk = 1;
    if (op.getNumReduced()) {
      tk = floorPow2(
          std::min<int64_t>(tensorCores ? 64 : 32, op.getExtent(n - 1)));
      b.spread(n - 1, tk, Mapping::Serial);
    }
    // As many stages as shared memory holds, at most 3 (4 on tensor cores).
    int64_t bytes = std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
    int64_t stageBytes = (tm + tn) * tk * bytes;
    int64_t stages = std::clamp<int64_t>(dev.sharedMemory / stageBytes, 1,
                                         tensorCores ? 4 : 3);
    // The vector: of the k step, the nested reduction's (its 32-long steps:
    // the register-tiled kernel's runs of points) for a SIMT product whose
    // one reduction is nested in an epilogue. (With several, the kernel is
    // a thread per point: a vector would give a thread several points.)
    int64_t vk = tk;
    SmallVector<ComprehensionOp> nested;
    for (Operation &inner : op.getBodyBlock())
      if (auto red = dyn_cast<ComprehensionOp>(inner))
        nested.push_back(red);
    if (simt && !op.getNumReduced() && nested.size() == 1 &&
        nested[0].getNumReduced() &&
        !nested[0].isSymbolicExtent(nested[0].getNumIndices() - 1))
      vk = floorPow2(std::min<int64_t>(
          32, nested[0].getExtent(nested[0].getNumIndices() - 1)));
    int64_t v = getVectorWidth(storage, vk, dev);
    while (vk != tk && v > 1 && op.getExtent(j) % v)
      v /= 2;
    return b.build(v, stages,
                   SmallVector<MemoryLevel>(stages, MemoryLevel::Shared));
  }
  case ShapeClass::OnlineSoftmax: {
    // (..., i, d) reduce (j): queries i tiled over blocks, d whole.
    if (np >= 2) {
      unsigned d = np - 1, i = np - 2;
      b.share(d, 1);
      b.spread(i, 64, Mapping::BlockX);
      b.setThreads(i, std::min<int64_t>(64, op.getExtent(i)));
      b.spreadOverGrid(ArrayRef(parallel).drop_back(2), Mapping::BlockY);
    }
    b.spread(n - 1, 64, Mapping::Serial);
    int64_t v = np ? getVectorWidth(storage, op.getExtent(np - 1), dev) : 1;
    return b.build(v, 2, {MemoryLevel::Shared, MemoryLevel::Shared});
  }
  }
  llvm_unreachable("unknown shape class");
}

struct TangSchedulePass : tang::impl::TangScheduleBase<TangSchedulePass> {
  using TangScheduleBase::TangScheduleBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    // The module's device model; an option given overrides its fact.
    TargetAttr target = getTarget(getOperation());
    auto fact = [](int64_t option, int64_t own) {
      return option ? option : own;
    };
    DeviceFacts dev{fact(smCount, target.getSmCount()),
                    fact(sharedMemory, target.getSharedPerBlock()),
                    fact(warpSize, target.getWarpSize()),
                    fact(maxThreads, target.getMaxThreads()),
                    tileSource == TileSource::TrafficBound,
                    target.getVectorBytes(),
                    target.getTensorCores() != TensorCoreKind::None,
                    target.getChip() == kPortableChip ? 4 : 0};
    dev.tf32 = tf32;
    if (dev.smCount < 1 || dev.sharedMemory < 1 || dev.warpSize < 1 ||
        dev.maxThreads < 1 || !llvm::isPowerOf2_64(dev.warpSize) ||
        dev.maxThreads < dev.warpSize) {
      getOperation().emitError()
          << "tang-schedule: device facts must be positive, the warp size a "
             "power of two and max-threads at least the warp size";
      return signalPassFailure();
    }
    KernelOptions kernels;
    kernels.tensorCores = resolveTensorCores(tensorCores, getOperation());
    kernels.tma = tma;
    kernels.warpSpecialize = warpSpecialize;
    kernels.tf32 = tf32;
    // Sums over several adjacent indices as one where that makes a
    // tensor-core contraction (weight gradients), before anything is
    // sized; why not where it does not.
    llvm::DenseMap<Operation *, std::string> collapseFailures;
    kernels.collapseFailures = &collapseFailures;
    SmallVector<ComprehensionOp> ops;
    // Of symbolic sizes, only matrix-vector products whose output extent
    // is symbolic are scheduled (a warp per output, a grid stride over the
    // outputs); the kernel form chooses the others' kernels (split_softmax
    // for decode attention, else a point kernel).
    getOperation().walk([&](ComprehensionOp op) {
      if (!isInIterationBody(op) &&
          (!hasSymbolicSizes(op) || (dev.warpSize == 32 && isMatVecForm(op))))
        ops.push_back(op);
    });
    if (kernels.tensorCores != TensorCoreKind::None)
      for (ComprehensionOp &op : ops) {
        if (op.getScheduleAttr() ||
            classifyComprehension(op) != ShapeClass::MatmulLike)
          continue;
        std::string why;
        Operation *old = op;
        Operation *next = op->getNextNode();
        if (collapseReductions(op, kernels.tensorCores == TensorCoreKind::Wgmma,
                               tf32, why))
          op = cast<ComprehensionOp>(next->getPrevNode());
        else if (!why.empty())
          collapseFailures[old] = why;
      }
    std::optional<ScheduleCache> tuned;
    if (!cache.empty()) {
      std::string error;
      FailureOr<ScheduleCache> loaded = ScheduleCache::load(cache, error);
      if (failed(loaded)) {
        getOperation().emitError() << "tang-schedule: " << error;
        return signalPassFailure();
      }
      tuned = std::move(*loaded);
    }
    for (ComprehensionOp op : ops) {
      if (!op.getScheduleAttr()) {
        ShapeClass cls = classifyComprehension(op);
        op->setAttr(kShapeClassAttrName,
                    StringAttr::get(op.getContext(), stringifyShapeClass(cls)));
        if (tuned && applyCachedSchedule(op, *tuned)) {
          ++numCached;
        } else {
          op.setScheduleAttr(scheduleFor(op, cls, dev));
          ++numScheduled;
        }
      }
      if (kernels.tensorCores == TensorCoreKind::None ||
          op.getScheduleAttr().getKernel() != KernelKind::Auto)
        continue;
      KernelChoice choice = chooseKernel(op, kernels, /*remarks=*/true);
      setKernelSchedule(op, choice);
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << op.getLoc() << ": "
                 << stringifyKernelKind(choice.kind) << " kernel\n");
      ++numKernels;
    }
    if (!candidates.empty() && failed(writeCandidates(ops, kernels)))
      return signalPassFailure();
  }

  /// Takes `op`'s schedule from the tuning cache: the exact entry, else
  /// (for the tensor-core kernels, whose tiles do not depend on the
  /// extents) the nearest of its size class. A matching entry its kernel
  /// cannot honour gets a warning. Whether one was taken.
  bool applyCachedSchedule(ComprehensionOp op, const ScheduleCache &tuned) {
    ScheduleKey key = getScheduleKey(op);
    for (const ScheduleCache::Entry *e : tuned.lookup(key, /*similar=*/true)) {
      bool exact = e->sizes == key.sizes;
      if (!exact) {
        auto s = dyn_cast_or_null<ScheduleAttr>(
            parseAttribute(e->text.schedule, op.getContext()));
        if (!s || !llvm::is_contained({KernelKind::Contraction,
                                       KernelKind::Flash, KernelKind::Score},
                                      s.getKernel()))
          continue;
      }
      std::string why;
      if (failed(applyScheduleText(op, e->text, why))) {
        op.emitWarning() << "the tuning cache's schedule for sizes " << e->sizes
                         << " is not taken: " << why;
        continue;
      }
      op->setAttr(kScheduleSourceAttrName,
                  StringAttr::get(op.getContext(), "cache"));
      return true;
    }
    return false;
  }

  /// Writes every scheduled comprehension's candidates to `candidates`.
  LogicalResult writeCandidates(ArrayRef<ComprehensionOp> ops,
                                const KernelOptions &kernels) {
    llvm::json::Array list;
    for (ComprehensionOp op : ops)
      list.push_back(getCandidatesJson(
          op, getScheduleCandidates(op, kernels, prune, maxCandidates)));
    std::error_code ec;
    llvm::ToolOutputFile out(candidates, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return getOperation().emitError()
             << "tang-schedule: cannot write the candidates to '" << candidates
             << "': " << ec.message();
    out.os() << llvm::formatv(
        "{0:2}", llvm::json::Value(llvm::json::Object{
                     {"version", 1}, {"kernels", std::move(list)}}));
    out.os() << "\n";
    out.keep();
    return success();
  }
};

} // namespace
