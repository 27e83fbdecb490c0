//===- KernelForm.h - kernel shapes of the kernel form ----------*- C++ -*-===//
//
// What the kernel side of --convert-tang-to-gpu shares: the kernel being
// built and how it is launched, and the kernel patterns, one kind of kernel
// each, that the conversion tries in order (each in a file of its own).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H
#define TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H

#include "Tang/Analysis/AttentionMatchers.h"
#include "Tang/Analysis/KernelChoice.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <deque>
#include <functional>
#include <optional>

namespace mlir::tang {

/// Whether the threads of `op`'s kernels may combine through 32-lane
/// subgroup shuffles: the target's warps are 32 lanes. On any other warp
/// size (the portable backends' 1: no subgroup size assumed) the row
/// kernels combine in workgroup memory alone, and the kernels built on
/// warps (matrix-vector, column, split rows) are not built.
inline bool hasWarpShuffles(Operation *op) {
  return getTarget(op).getWarpSize() == 32;
}
/// Whether `op`'s kernels may access memory in vectors: the target's
/// widest access is more than one byte (the portable backends print
/// scalars).
inline bool hasVectorAccess(Operation *op) {
  return getTarget(op).getVectorBytes() > 1;
}

/// Whether every result of `op` is stored in f16 or bf16: then fast
/// approximations of transcendental functions and divisions are used.
inline bool isLowPrecision(ComprehensionOp op) {
  return llvm::all_of(op.getResultTypes(), [](Type t) {
    Type e = cast<RankedTensorType>(t).getElementType();
    return e.isF16() || e.isBF16();
  });
}

class KernelSizes;

/// A tensor map (CUtensorMap) the kernel takes by value: a tiled view of
/// one of its buffer parameters for bulk tensor copies (TMA). The host
/// launch describes it with nvgpu.tma.create.descriptor; the runtime
/// encodes it from the buffer's dense row-major shape.
struct TensorMapParam {
  /// The kernel parameter (a buffer) the map views.
  unsigned buffer;
  /// The box: elements per copy along each of the buffer's dimensions,
  /// outermost first.
  SmallVector<int64_t> box;
  /// The shared-memory swizzle in bytes (128 or 64).
  int64_t swizzleBytes;
};

/// A kernel and how to launch it.
struct Kernel {
  gpu::GPUFuncOp func;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  /// Dynamic shared memory per block, in bytes.
  int64_t sharedBytes = 0;
  /// Tensor maps, the kernel's last parameters in this order.
  SmallVector<TensorMapParam> tensorMaps;
  /// Whether the kernel also wrote the results of the sibling comprehension
  /// it was offered (softmax statistics beside a flash kernel, a second
  /// score reduction beside a score kernel).
  bool wroteSibling = false;
  /// The kernel's sizes, when its function has symbolic sizes (its last
  /// parameter holds their values): only kernels that take them (point,
  /// scan and scatter kernels) are built for such functions.
  KernelSizes *sizes = nullptr;
  /// Scratch buffers (KernelRequest::addScratch): the host allocates them,
  /// uninitialised, and passes them after the outputs (before the sizes).
  SmallVector<MemRefType> scratch;
  /// Kernels launched right after this one with the same arguments
  /// (KernelRequest::addFollowUp): a split reduction's combining step. (A
  /// deque: adding one keeps the others where they are.)
  std::deque<Kernel> followUps;

  /// Appends a tensor-map parameter for `param` to the kernel and returns
  /// it (a generic pointer to the map).
  Value addTensorMap(TensorMapParam param);
};

/// The buffer type of a ranked tensor: a dense row-major memref.
MemRefType getMemRefType(Type tensor);
/// The type of a kernel parameter holding a ranked tensor: its buffer type,
/// or a flat memref<?xT> for a tensor with a `?` dimension (KernelSizes
/// knows its shape).
MemRefType getKernelBufferType(Type tensor);

/// Converts a value in compute type back to its storage type.
Value toStorage(OpBuilder &b, Location loc, Value v, Type storage);

/// The tensors `op` (a comprehension or a scatter) reads, in order of
/// first read.
SmallVector<Value> getTensorsRead(Operation *op);

/// One thread per point of the row-major domain `extents`: sets `k`'s
/// launch (blocks of up to 256 threads), emits the linear thread id and a
/// guard that it is in range, moves `b` into the guard and returns the
/// point's indices there (empty, with an error on `op`, if one launch
/// cannot cover the domain).
FailureOr<SmallVector<Value>> emitThreadPerPoint(OpBuilder &b, Operation *op,
                                                 ArrayRef<int64_t> extents,
                                                 Kernel &k);
/// One thread per (point, column) of `type`, whose last `own` dimensions
/// belong to a point and whose last one is the column (a scan's [P..., T,
/// K, V] with `own` 3): emitThreadPerPoint over [P..., V]; the point's
/// indices, then the column.
FailureOr<SmallVector<Value>> emitThreadPerColumn(OpBuilder &b, Operation *op,
                                                  RankedTensorType type,
                                                  unsigned own, Kernel &k);
/// One thread per point of the row-major domain `extents` (index values,
/// known when the kernel runs): a fixed grid of 256-thread blocks strides
/// over the domain. Moves `b` into the loop and returns the point's
/// indices there.
SmallVector<Value> emitGridStridePoints(OpBuilder &b, Location loc,
                                        ArrayRef<Value> extents, Kernel &k);

/// The kernel of a scatter (ScatterKernel.cpp): `output` already holds a
/// copy of its base; each thread takes the points of one value of the
/// indices that alone give a coordinate (such points never write the same
/// element) and runs the others serially in row-major order, writing or
/// combining in place: collisions combine in row-major order on every
/// backend, without atomics.
LogicalResult emitScatterKernel(OpBuilder &b, ScatterOp op, IRMapping &tensors,
                                Value output, Kernel &k);

/// The flash and score kernels without tensor cores (SimtScoreKernel.cpp):
/// `op` matched as `m`, its tiles `cfg`; a flash kernel's softmax
/// statistics to `statsOutputs` when not empty.
LogicalResult emitSimtFlashKernel(OpBuilder &b, ComprehensionOp op,
                                  const FlashMatch &m,
                                  const SimtTileConfig &cfg, IRMapping &tensors,
                                  ValueRange outputs, ValueRange statsOutputs,
                                  Kernel &k);
LogicalResult emitSimtScoreKernel(OpBuilder &b, ComprehensionOp op,
                                  const ScoreMatch &m,
                                  const SimtTileConfig &cfg, IRMapping &tensors,
                                  ValueRange outputs, Kernel &k);

/// The kernel of a tang.tensor_scan under the composition of affine maps
/// (TensorScanKernel.cpp), the states into `outputs[1]`; the products of
/// the transitions (`outputs[0]`) are not written. `cooperative`: one
/// workgroup per parallel point and block of state columns, the slice of
/// the state in workgroup memory; otherwise one thread per parallel point
/// and state column (no barriers).
LogicalResult emitAffineScanKernel(OpBuilder &b, TensorScanOp op,
                                   IRMapping &tensors, ValueRange outputs,
                                   Kernel &k, bool cooperative);

/// The kernel of a tang.triangular_solve (TriangularSolveKernel.cpp): a
/// thread per (parallel point, column) substitutes its column into
/// `output`; `vectorLoads` (the CUDA kernel form, `cooperative`): the
/// rows of L as 16-byte vectors.
LogicalResult emitTriangularSolveKernel(OpBuilder &b, TriangularSolveOp op,
                                        IRMapping &tensors, Value output,
                                        Kernel &k, bool vectorLoads);

/// The kernel of a scan (ScanKernel.cpp): a thread per parallel point,
/// carrying the monoid's carrier along the scan index in order and storing
/// every prefix into `outputs`.
LogicalResult emitScanKernel(OpBuilder &b, ScanOp op, IRMapping &tensors,
                             ValueRange outputs, Kernel &k);

//===----------------------------------------------------------------------===//
// Kernel patterns
//===----------------------------------------------------------------------===//

/// A comprehension to build a kernel for: the kernel function `k.func`
/// (its entry block holds the builder `b`), the buffers of the tensors it
/// reads (`tensors`) and of its results (`outputs`); and maybe `sibling`, a
/// later comprehension the kernel may compute too (the softmax statistics
/// beside a flash kernel, a second score reduction beside a score kernel),
/// with its result buffers; `choice`: the kernel its schedule names (or
/// chooseKernel gave), with the matchers' findings and the tiles.
struct KernelRequest {
  OpBuilder &b;
  ComprehensionOp op;
  const KernelChoice &choice;
  IRMapping &tensors;
  ValueRange outputs;
  ComprehensionOp sibling;
  ValueRange siblingOutputs;
  Kernel &k;
  /// Adds a scratch buffer of `type` to `k` (a parameter after the
  /// outputs; Kernel::scratch) and returns it. Before any workgroup
  /// memory and before addFollowUp.
  std::function<Value(MemRefType type)> addScratch;
  /// Adds a kernel launched after `k` with the same parameters (Kernel::
  /// followUps) and returns it, its function's entry block empty but for
  /// the loads of its sizes (which the conversion owns).
  std::function<Kernel &()> addFollowUp;
};

/// What a kernel pattern did with a request.
enum class KernelMatch {
  /// It built the kernel.
  Built,
  /// It does not apply, and built nothing; the next pattern is tried.
  NoMatch,
  /// Building failed after a match, with an error emitted: the conversion
  /// stops.
  Error,
};

/// One kind of kernel (flash attention, score, tensor-core contraction,
/// subgroup matrix, row, point): builds the kernel of the requests whose
/// choice is its kind. Patterns only build: what they build is fixed by the
/// comprehension and its kernel choice (KernelChoice.h).
class KernelPattern {
public:
  explicit KernelPattern(StringRef name) : name(name) {}
  virtual ~KernelPattern() = default;

  /// The kind of kernel, for debug output.
  StringRef getName() const { return name; }

  virtual KernelMatch matchAndBuild(KernelRequest &request) const = 0;

protected:
  /// Does not apply, for `reason` (printed under
  /// -debug-only=convert-tang-to-gpu).
  KernelMatch notifyMatchFailure(ComprehensionOp op, const Twine &reason) const;
  /// Does not apply, and the user is told `reason` in a remark on `op`:
  /// a comprehension that looked like this kernel's and is not (its remark
  /// says why it runs on a slower kernel).
  KernelMatch remarkMatchFailure(ComprehensionOp op, const Twine &reason) const;

private:
  std::string name;
};

/// The kernel patterns of a conversion, tried in order for every
/// comprehension; the first that builds wins.
using KernelPatternSet = SmallVector<std::unique_ptr<KernelPattern>>;

/// Flash attention on tensor cores: a reduction under the online-softmax
/// monoid whose scores are a scaled (and possibly masked) dot product of two
/// 16-bit reads and whose values are a 16-bit read; also writes the softmax
/// statistics of a sibling softmax_norm reduction (FlashKernel.cpp).
void populateFlashKernelPatterns(KernelPatternSet &patterns);

/// Score kernels on tensor cores: an add (or softmax_norm) reduction over
/// one key index whose body computes scores from one or two nested dot
/// products of 16-bit reads (attention's gradients and saved statistics as
/// --tang-grad derives them); also a sibling score reduction whose dot
/// products are among its own (ScoreKernel.cpp).
void populateScoreKernelPatterns(KernelPatternSet &patterns);

/// Tensor-core contractions (matchMmaContraction): mma.sync, or wgmma with
/// bulk tensor copies and warp specialisation (MmaKernel.cpp).
void populateMmaKernelPatterns(KernelPatternSet &patterns);

/// Contractions on the gpu dialect's portable subgroup matrix operations
/// (SubgroupMmaKernel.cpp).
void populateSubgroupMmaKernelPatterns(KernelPatternSet &patterns,
                                       const KernelOptions &options);

/// Split online-softmax reductions (decode attention over a long context):
/// blocks take runs of keys, a second kernel combines their carriers
/// (SplitSoftmaxKernel.cpp).
void populateSplitSoftmaxKernelPatterns(KernelPatternSet &patterns);

/// Column reductions: strips of columns per block, runs of rows per warp
/// and (split k) per block, combined in order (ColumnKernel.cpp).
void populateColumnKernelPatterns(KernelPatternSet &patterns);

/// Register-tiled SIMT contractions: a matmul-like comprehension whose
/// schedule gives each thread several points of its rows and columns
/// (TiledKernel.cpp).
void populateTiledKernelPatterns(KernelPatternSet &patterns);

/// Row kernels (a block per row, nested reductions cooperative) and point
/// kernels (a thread per parallel point), the latter matching every
/// comprehension (RowKernel.cpp).
void populateRowKernelPatterns(KernelPatternSet &patterns);

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H
