//===- TangAttrs.cpp - tang attributes --------------------------*- C++ -*-===//
//
// Builtin monoid facts and the #tang.schedule attribute's syntax and
// verifier.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangAttrs.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;

#include "Tang/Dialect/Tang/IR/TangEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Tang/Dialect/Tang/IR/TangAttrs.cpp.inc"

void TangDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Tang/Dialect/Tang/IR/TangAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Builtin monoids
//===----------------------------------------------------------------------===//

unsigned mlir::tang::getNumMonoidYields(MonoidKind kind) {
  switch (kind) {
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin:
  case MonoidKind::OnlineSoftmax:
    return 2;
  default:
    return 1;
  }
}

unsigned mlir::tang::getNumMonoidResults(MonoidKind kind) {
  switch (kind) {
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin:
  case MonoidKind::SoftmaxNorm:
    return 2;
  default:
    return 1;
  }
}

bool mlir::tang::isTangElementType(Type t) {
  return t.isF64() || t.isF32() || t.isF16() || t.isBF16() ||
         t.isSignlessInteger(32) || t.isSignlessInteger(8) ||
         t.isSignlessInteger(1);
}

//===----------------------------------------------------------------------===//
// ScheduleAttr
//===----------------------------------------------------------------------===//

namespace {
/// Parses `[kw, kw, ...]` where each keyword names a case of an enum.
template <typename EnumT>
ParseResult
parseEnumList(AsmParser &p, SmallVectorImpl<EnumT> &out, StringRef what,
              llvm::function_ref<std::optional<EnumT>(StringRef)> symbolize) {
  return p.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        SMLoc loc = p.getCurrentLocation();
        StringRef kw;
        if (p.parseKeyword(&kw))
          return failure();
        std::optional<EnumT> v = symbolize(kw);
        if (!v)
          return p.emitError(loc, "unknown ") << what << " '" << kw << "'";
        out.push_back(*v);
        return success();
      });
}

/// Deeper software pipelines than this do not fit any GPU's shared memory.
constexpr int64_t kMaxStages = 16;
/// No GPU tang targets runs larger blocks.
constexpr int64_t kMaxThreads = 1024;

} // namespace

Attribute ScheduleAttr::parse(AsmParser &p, Type) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<int64_t> tile;
  SmallVector<Mapping> mapping;
  SmallVector<int64_t> threads;
  SmallVector<MemoryLevel> memory;
  int64_t vector = 1, stages = 1;
  Type storage, accumulate;
  KernelKind kernel = KernelKind::Auto;
  TensorCoreKind mma = TensorCoreKind::None;
  bool tma = false, warpSpecialize = false, persistent = false;
  int64_t groupM = 0, splitK = 1;
  llvm::StringSet<> seen;
  auto parseBool = [&](bool &out) -> ParseResult {
    FailureOr<bool> v = parseBoolParameter(p);
    if (failed(v))
      return failure();
    out = *v;
    return success();
  };

  auto parseField = [&]() -> ParseResult {
    SMLoc keyLoc = p.getCurrentLocation();
    StringRef key;
    if (p.parseKeyword(&key) || p.parseEqual())
      return failure();
    if (!seen.insert(key).second)
      return p.emitError(keyLoc, "duplicate schedule field '") << key << "'";
    if (key == "tile")
      return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return p.parseInteger(tile.emplace_back());
      });
    if (key == "threads")
      return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return p.parseInteger(threads.emplace_back());
      });
    if (key == "mapping")
      return parseEnumList<Mapping>(p, mapping, "mapping", [](StringRef s) {
        return symbolizeMapping(s);
      });
    if (key == "memory")
      return parseEnumList<MemoryLevel>(
          p, memory, "memory level",
          [](StringRef s) { return symbolizeMemoryLevel(s); });
    if (key == "vector")
      return p.parseInteger(vector);
    if (key == "stages")
      return p.parseInteger(stages);
    if (key == "storage")
      return p.parseType(storage);
    if (key == "accumulate")
      return p.parseType(accumulate);
    if (key == "kernel" || key == "mma") {
      SMLoc at = p.getCurrentLocation();
      StringRef kw;
      if (p.parseKeyword(&kw))
        return failure();
      if (key == "kernel") {
        std::optional<KernelKind> k = symbolizeKernelKind(kw);
        if (!k)
          return p.emitError(at, "unknown kernel kind '") << kw << "'";
        kernel = *k;
        return success();
      }
      std::optional<TensorCoreKind> m = symbolizeTensorCoreKind(kw);
      if (!m)
        return p.emitError(at, "unknown tensor-core kind '") << kw << "'";
      mma = *m;
      return success();
    }
    if (key == "tma")
      return parseBool(tma);
    if (key == "warp_specialize")
      return parseBool(warpSpecialize);
    if (key == "persistent")
      return parseBool(persistent);
    if (key == "group_m")
      return p.parseInteger(groupM);
    if (key == "split_k")
      return p.parseInteger(splitK);
    return p.emitError(keyLoc, "unknown schedule field '")
           << key
           << "'; expected tile, mapping, threads, vector, stages, storage, "
              "accumulate, memory, kernel, mma, tma, warp_specialize, "
              "persistent, group_m or split_k";
  };
  if (p.parseLess() || p.parseCommaSeparatedList(parseField) ||
      p.parseGreater())
    return {};
  if (!seen.contains("tile")) {
    p.emitError(loc, "schedule needs a 'tile' field");
    return {};
  }
  // Defaults for the optional fields.
  if (!seen.contains("mapping"))
    mapping.assign(tile.size(), Mapping::Serial);
  if (!seen.contains("threads"))
    threads.assign(tile.size(), 1);
  if (!seen.contains("memory") && stages > 0 && stages <= kMaxStages)
    memory.assign(stages, MemoryLevel::Global);
  if (!accumulate)
    accumulate = Float32Type::get(p.getContext());
  if (!seen.contains("group_m") && kernel == KernelKind::Contraction)
    groupM = 8;
  return getChecked([&] { return p.emitError(loc); }, p.getContext(), tile,
                    mapping, threads, vector, stages, storage, accumulate,
                    memory, kernel, mma, tma, warpSpecialize, persistent,
                    groupM, splitK);
}

void ScheduleAttr::print(AsmPrinter &p) const {
  p << "<tile = [";
  llvm::interleaveComma(getTile(), p);
  p << "], mapping = [";
  llvm::interleaveComma(getMapping(), p,
                        [&](Mapping m) { p << stringifyMapping(m); });
  p << "], threads = [";
  llvm::interleaveComma(getThreads(), p);
  p << "], vector = " << getVector() << ", stages = " << getStages();
  if (getStorage())
    p << ", storage = " << getStorage();
  p << ", accumulate = " << getAccumulate() << ", memory = [";
  llvm::interleaveComma(getMemory(), p,
                        [&](MemoryLevel m) { p << stringifyMemoryLevel(m); });
  p << "]";
  if (getKernel() != KernelKind::Auto)
    p << ", kernel = " << stringifyKernelKind(getKernel());
  if (getMma() != TensorCoreKind::None)
    p << ", mma = " << stringifyTensorCoreKind(getMma());
  if (getTma())
    p << ", tma = true";
  if (getWarpSpecialize())
    p << ", warp_specialize = true";
  if (getPersistent())
    p << ", persistent = true";
  if (getGroupM())
    p << ", group_m = " << getGroupM();
  if (getSplitK() != 1)
    p << ", split_k = " << getSplitK();
  p << ">";
}

LogicalResult ScheduleAttr::verify(
    llvm::function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> tile,
    ArrayRef<Mapping> mapping, ArrayRef<int64_t> threads, int64_t vector,
    int64_t stages, Type storage, Type accumulate, ArrayRef<MemoryLevel> memory,
    KernelKind kernel, TensorCoreKind mma, bool tma, bool warpSpecialize,
    bool persistent, int64_t groupM, int64_t splitK) {
  if (tile.empty())
    return emitError() << "schedule tile must have one size per index";
  for (int64_t t : tile)
    if (t <= 0)
      return emitError() << "schedule tile sizes must be positive, got " << t;
  if (mapping.size() != tile.size())
    return emitError() << "schedule mapping has " << mapping.size()
                       << " entries but tile has " << tile.size();
  if (threads.size() != tile.size())
    return emitError() << "schedule threads has " << threads.size()
                       << " entries but tile has " << tile.size();
  int64_t blockSize = 1;
  for (auto [t, n] : llvm::zip(tile, threads)) {
    if (n < 1 || (n > t && n % t != 0))
      return emitError() << "schedule shares a tile of " << t << " among " << n
                         << " threads (expected 1 to " << t
                         << ", or a multiple of " << t
                         << ": threads sharing each element)";
    blockSize *= n;
    if (blockSize > kMaxThreads)
      return emitError() << "schedule needs more than " << kMaxThreads
                         << " threads per block";
  }
  // Each hardware dimension can carry at most one index, but block_z
  // several of one point a block (a product's batch indices, flattened).
  for (auto [i, m] : llvm::enumerate(mapping)) {
    if (m == Mapping::Serial)
      continue;
    if (m == Mapping::BlockZ &&
        llvm::all_of(llvm::enumerate(mapping), [&](auto e) {
          return e.value() != Mapping::BlockZ || tile[e.index()] == 1;
        }))
      continue;
    if (llvm::count(mapping.take_front(i), m))
      return emitError() << "schedule maps two indices to '"
                         << stringifyMapping(m) << "'"
                         << (m == Mapping::BlockZ
                                 ? " (several only with tiles of 1)"
                                 : "");
  }
  if (!llvm::is_contained({1, 2, 4, 8, 16}, vector))
    return emitError() << "schedule vector width must be 1, 2, 4, 8 or 16, got "
                       << vector;
  if (stages < 1 || stages > kMaxStages)
    return emitError() << "schedule needs 1 to " << kMaxStages
                       << " stages, got " << stages;
  if (storage && !isTangElementType(storage))
    return emitError() << "schedule storage type must be a tang element type, "
                          "got "
                       << storage;
  if (!accumulate || !isTangElementType(accumulate) ||
      accumulate.isInteger(1) || accumulate.isInteger(8))
    return emitError() << "schedule accumulate type must be f64, f32, f16, "
                          "bf16 or i32, got "
                       << accumulate;
  if (storage && storage.isIntOrFloat() &&
      isa<FloatType>(storage) != isa<FloatType>(accumulate))
    return emitError() << "schedule accumulates " << storage << " in "
                       << accumulate
                       << ": storage and accumulate must both be "
                          "floating-point or both integer";
  if (storage && isa<FloatType>(storage) &&
      cast<FloatType>(accumulate).getFPMantissaWidth() <
          cast<FloatType>(storage).getFPMantissaWidth())
    return emitError() << "schedule accumulates " << storage << " in "
                       << accumulate << ", which is less precise";
  if (static_cast<int64_t>(memory.size()) != stages)
    return emitError() << "schedule has " << stages << " stages but "
                       << memory.size() << " memory levels";
  // Flash and score kernels have a SIMT form (mma = none:
  // SimtScoreKernel.cpp).
  bool tensorCoreKernel = kernel == KernelKind::Contraction;
  bool mayHaveMma = tensorCoreKernel || kernel == KernelKind::Flash ||
                    kernel == KernelKind::Score;
  if ((tensorCoreKernel && mma == TensorCoreKind::None) ||
      (!mayHaveMma && mma != TensorCoreKind::None))
    return emitError() << "schedule of a " << stringifyKernelKind(kernel)
                       << " kernel "
                       << (tensorCoreKernel ? "needs mma = mma_sync or wgmma"
                                            : "takes no mma")
                       << " (tensor-core instructions belong to "
                          "contraction, flash and score kernels; flash and "
                          "score kernels without them are SIMT)";
  if (groupM < 0 || (groupM > 0) != (kernel == KernelKind::Contraction))
    return emitError() << "schedule group_m is a contraction's (at least 1), "
                          "got "
                       << groupM << " on a " << stringifyKernelKind(kernel)
                       << " kernel";
  if (splitK < 1 || (splitK > 1 && kernel != KernelKind::Contraction &&
                     kernel != KernelKind::Simt && kernel != KernelKind::Auto))
    return emitError() << "schedule split_k is a contraction's or a column "
                          "reduction's (at least 1), got "
                       << splitK << " on a " << stringifyKernelKind(kernel)
                       << " kernel";
  if (splitK > 1 && persistent)
    return emitError() << "schedule split_k = " << splitK
                       << " with a persistent grid: a split contraction's "
                          "blocks each take one tile's run of k steps";
  if ((tma || warpSpecialize || persistent) && mma != TensorCoreKind::Wgmma)
    return emitError() << "schedule asks for bulk tensor copies, warp "
                          "specialisation or a persistent grid, which only "
                          "wgmma kernels have";
  return success();
}

//===----------------------------------------------------------------------===//
// The device model
//===----------------------------------------------------------------------===//

FailureOr<bool> mlir::tang::parseBoolParameter(AsmParser &parser) {
  StringRef word;
  SMLoc at = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  if (word == "true" || word == "false")
    return word == "true";
  return parser.emitError(at) << "expected true or false, got '" << word << "'";
}

LogicalResult TargetAttr::verify(
    llvm::function_ref<InFlightDiagnostic()> emitError, StringRef chip,
    StringRef device, int64_t smCount, int64_t sharedPerBlock,
    int64_t sharedPerSm, int64_t registersPerSm, int64_t warpSize,
    int64_t maxThreads, TensorCoreKind tensorCores, bool tma, bool clusters,
    int64_t l2Bytes, int64_t dramBytesPerS, int64_t tensorOpsPerS,
    int64_t fp32OpsPerS, int64_t vectorBytes) {
  if (chip.empty())
    return emitError() << "target: chip must not be empty";
  if (smCount < 1 || sharedPerBlock < 1 || registersPerSm < 1 || maxThreads < 1)
    return emitError() << "target: sm_count, shared_per_block, "
                          "registers_per_sm and max_threads must be positive";
  if (sharedPerSm < sharedPerBlock)
    return emitError() << "target: shared_per_sm (" << sharedPerSm
                       << ") is less than shared_per_block (" << sharedPerBlock
                       << ")";
  if (warpSize < 1 || !llvm::isPowerOf2_64(warpSize) || maxThreads < warpSize)
    return emitError() << "target: warp_size must be a power of two no "
                          "larger than max_threads";
  if (vectorBytes < 1 || vectorBytes > 64 || !llvm::isPowerOf2_64(vectorBytes))
    return emitError() << "target: vector_bytes must be a power of two "
                          "from 1 to 64";
  if (l2Bytes < 0 || dramBytesPerS < 0 || tensorOpsPerS < 0 || fp32OpsPerS < 0)
    return emitError() << "target: sizes and peaks must not be negative "
                          "(0: unknown)";
  return success();
}
