//===- ExportBundle.cpp - --tang-export-bundle and the manifest -*- C++ -*-===//
//
// Reads the kernel form's host functions (memref arguments, memref.alloc
// temporaries, gpu.launch_func with constant grid and block) and the
// `gpu.binary` images (or a spirv.module), and writes manifest.json plus the
// image. The manifest writer is shared by every bundle (docs/Bundle.md).
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Bundle/ExportBundle.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangSizes.h"
#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGEXPORTBUNDLE
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-export-bundle"

using namespace mlir;
using namespace mlir::tang;

static FailureOr<std::string> getDtype(Operation *at, Type t) {
  if (t.isF64())
    return std::string("f64");
  if (t.isF32())
    return std::string("f32");
  if (t.isF16())
    return std::string("f16");
  if (t.isBF16())
    return std::string("bf16");
  if (t.isSignlessInteger(32))
    return std::string("i32");
  if (t.isSignlessInteger(8))
    return std::string("i8");
  if (t.isSignlessInteger(1))
    return std::string("i1");
  return at->emitOpError() << "has a buffer of element type " << t
                           << " that the CUDA bundle cannot describe";
}

/// A buffer of type `t`: its dtype and dense row-major shape; a `?`
/// dimension is the size `shape` gives it, as [constant, coefficient of
/// size symbol 0, 1, ...] (docs/Bundle.md).
static FailureOr<llvm::json::Object> describeBuffer(Operation *at, Type t,
                                                    ArrayAttr shape = {}) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m || !m.getLayout().isIdentity() ||
      (!m.hasStaticShape() &&
       (!shape || static_cast<int64_t>(shape.size()) != m.getRank())))
    return at->emitOpError()
           << "has a buffer " << t
           << " that is not a dense memref of static or described shape";
  FailureOr<std::string> dtype = getDtype(at, m.getElementType());
  if (failed(dtype))
    return failure();
  llvm::json::Array dims;
  for (auto [d, n] : llvm::enumerate(m.getShape())) {
    if (!ShapedType::isDynamic(n)) {
      dims.push_back(n);
      continue;
    }
    auto size = dyn_cast<DenseI64ArrayAttr>(shape[d]);
    if (!size || size.empty())
      return at->emitOpError() << "has no size for dimension " << d;
    dims.push_back(llvm::json::Array(size.asArrayRef()));
  }
  return llvm::json::Object{{"shape", std::move(dims)}, {"dtype", *dtype}};
}

static FailureOr<llvm::json::Array>
getDim3(gpu::LaunchFuncOp launch, gpu::KernelDim3 dims, StringRef what) {
  llvm::json::Array out;
  for (Value v : {dims.x, dims.y, dims.z}) {
    std::optional<int64_t> c = getConstantIntValue(v);
    if (!c)
      return launch.emitOpError()
             << "has a non-constant " << what << " size: the CUDA bundle "
             << "needs static launch configurations";
    out.push_back(*c);
  }
  return out;
}

/// The tensor map a launch passes as `cast` (of an
/// nvgpu.tma.create.descriptor of a memref.cast of `source`, a buffer): its
/// box and swizzle. The runtime encodes it with zero fill out of bounds,
/// 256-byte L2 promotion and no interleave (docs/Bundle.md).
static FailureOr<llvm::json::Object>
describeTensorMap(gpu::LaunchFuncOp launch, UnrealizedConversionCastOp cast,
                  Value &source) {
  auto fail = [&] {
    return launch.emitOpError()
           << "passes a kernel argument that is neither a buffer nor a "
              "tensor map of one";
  };
  auto create =
      cast.getNumOperands() == 1
          ? cast.getOperand(0).getDefiningOp<nvgpu::TmaCreateDescriptorOp>()
          : nvgpu::TmaCreateDescriptorOp();
  if (!create || !create.getTensor().getDefiningOp<memref::CastOp>())
    return fail();
  nvgpu::TensorMapDescriptorType type = create.getTensorMap().getType();
  source = create.getTensor().getDefiningOp<memref::CastOp>().getSource();
  auto sourceType = dyn_cast<MemRefType>(source.getType());
  MemRefType box = type.getTensor();
  if (!sourceType || sourceType.getRank() != box.getRank() ||
      type.getInterleave() != nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE ||
      type.getOob() != nvgpu::TensorMapOOBKind::OOB_ZERO ||
      type.getL2promo() != nvgpu::TensorMapL2PromoKind::L2PROMO_256B)
    return launch.emitOpError()
           << "passes a tensor map the CUDA bundle cannot describe (it "
              "needs the buffer's rank, zero fill, 256-byte L2 promotion "
              "and no interleave)";
  int64_t swizzle = 0;
  switch (type.getSwizzle()) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    swizzle = 0;
    break;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    swizzle = 32;
    break;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    swizzle = 64;
    break;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    swizzle = 128;
    break;
  }
  llvm::json::Array dims;
  for (int64_t d : box.getShape())
    dims.push_back(d);
  return llvm::json::Object{{"box", std::move(dims)}, {"swizzle", swizzle}};
}

/// Writes the contents of a tensor constant (dense, row-major, the buffer's
/// dtype, little-endian) to `dir`/`name`.
static LogicalResult writeData(Operation *at, DenseElementsAttr data,
                               StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return at->emitOpError()
           << "cannot write '" << path << "': " << ec.message();
  ArrayRef<char> raw = data.getRawData();
  int64_t n = data.getNumElements();
  // A splat holds one element.
  for (int64_t i = 0, e = data.isSplat() ? n : 1; i < e; ++i)
    os.write(raw.data(), raw.size());
  return success();
}

static FailureOr<llvm::json::Object> describeFunction(func::FuncOp func,
                                                      StringRef dir) {
  auto numInputs = func->getAttrOfType<IntegerAttr>(kNumInputsAttrName);
  if (!numInputs)
    return func.emitOpError() << "is not a kernel-form host function";
  llvm::json::Array args, temps, launches;
  // Symbolic sizes: what they are, the shapes they give, what they need.
  auto sizes = func->getAttrOfType<DictionaryAttr>(kSizesAttrName);
  ArrayAttr shapes = sizes ? sizes.getAs<ArrayAttr>("shapes") : ArrayAttr();
  for (auto [i, t] : llvm::enumerate(func.getArgumentTypes())) {
    if (t.isIndex()) {
      args.push_back(llvm::json::Object{{"role", "size"}});
      continue;
    }
    FailureOr<llvm::json::Object> d = describeBuffer(
        func, t,
        shapes && i < shapes.size() ? dyn_cast<ArrayAttr>(shapes[i])
                                    : ArrayAttr());
    if (failed(d))
      return failure();
    (*d)["role"] =
        static_cast<int64_t>(i) < numInputs.getInt() ? "input" : "output";
    // An output updated in place: the buffer of a donated input.
    if (auto aliases = func->getAttrOfType<DenseI64ArrayAttr>(kAliasesAttrName))
      for (int64_t k = 0; k + 1 < static_cast<int64_t>(aliases.size()); k += 2)
        if (aliases[k] == static_cast<int64_t>(i))
          (*d)["alias"] = aliases[k + 1];
    args.push_back(std::move(*d));
  }
  llvm::DenseMap<Value, int64_t> tempIndex;
  Value sizesBuffer;
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (alloc->hasAttr(kSizesBufferAttrName)) {
        sizesBuffer = alloc;
        continue;
      }
      FailureOr<llvm::json::Object> d =
          describeBuffer(alloc, alloc.getType(),
                         alloc->getAttrOfType<ArrayAttr>(kShapeAttrName));
      if (failed(d))
        return failure();
      // A tensor constant: its contents in a file of the bundle.
      if (auto data = alloc->getAttrOfType<DenseElementsAttr>(kDataAttrName)) {
        std::string name = (func.getSymName() + "_data_" +
                            Twine(static_cast<int64_t>(temps.size())) + ".bin")
                               .str();
        if (failed(writeData(alloc, data, dir, name)))
          return failure();
        (*d)["data"] = name;
      }
      tempIndex[alloc.getResult()] = temps.size();
      temps.push_back(std::move(*d));
      continue;
    }
    auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
    if (!launch)
      continue;
    FailureOr<llvm::json::Array> grid =
        getDim3(launch, launch.getGridSizeOperandValues(), "grid");
    FailureOr<llvm::json::Array> block =
        getDim3(launch, launch.getBlockSizeOperandValues(), "block");
    if (failed(grid) || failed(block))
      return failure();
    int64_t shared = 0;
    if (Value s = launch.getDynamicSharedMemorySize()) {
      std::optional<int64_t> c = getConstantIntValue(s);
      if (!c)
        return launch.emitOpError() << "has a non-constant shared memory size";
      shared = *c;
    }
    llvm::json::Array kargs;
    auto describeBufferArg = [&](Value v) -> FailureOr<llvm::json::Object> {
      // A buffer with a `?` dimension is passed flat; a returned flat
      // reshape's source writes its result through a view (both views of
      // the same row-major memory).
      while (Operation *def = v.getDefiningOp()) {
        if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def))
          v = collapse.getSrc();
        else if (auto expand = dyn_cast<memref::ExpandShapeOp>(def))
          v = expand.getSrc();
        else
          break;
      }
      if (v == sizesBuffer)
        return llvm::json::Object{{"sizes", true}};
      if (auto arg = dyn_cast<BlockArgument>(v))
        return llvm::json::Object{{"arg", arg.getArgNumber()}};
      auto it = tempIndex.find(v);
      if (it == tempIndex.end())
        return launch.emitOpError()
               << "passes a kernel argument that is neither a function "
                  "argument nor a temporary";
      return llvm::json::Object{{"temp", it->second}};
    };
    for (Value v : launch.getKernelOperands()) {
      // A tensor map: nvgpu.tma.create.descriptor of a buffer, cast to the
      // kernel parameter's pointer type.
      if (auto cast = v.getDefiningOp<UnrealizedConversionCastOp>()) {
        Value source;
        FailureOr<llvm::json::Object> map =
            describeTensorMap(launch, cast, source);
        if (failed(map))
          return failure();
        FailureOr<llvm::json::Object> buffer = describeBufferArg(source);
        if (failed(buffer))
          return failure();
        (*buffer)["tensor_map"] = std::move(*map);
        kargs.push_back(std::move(*buffer));
        continue;
      }
      FailureOr<llvm::json::Object> buffer = describeBufferArg(v);
      if (failed(buffer))
        return failure();
      kargs.push_back(std::move(*buffer));
    }
    launches.push_back(
        llvm::json::Object{{"kernel", launch.getKernelName().getValue().str()},
                           {"grid", std::move(*grid)},
                           {"block", std::move(*block)},
                           {"shared_bytes", shared},
                           {"args", std::move(kargs)}});
  }
  llvm::json::Object function{{"name", func.getSymName().str()},
                              {"args", std::move(args)},
                              {"temporaries", std::move(temps)},
                              {"launches", std::move(launches)}};
  if (auto checks = func->getAttrOfType<ArrayAttr>(kIndexChecksAttrName)) {
    llvm::json::Array out;
    for (auto d : checks.getAsRange<DictionaryAttr>())
      out.push_back(
          llvm::json::Object{{"arg", d.getAs<IntegerAttr>("arg").getInt()},
                             {"bound", d.getAs<IntegerAttr>("bound").getInt()},
                             {"what", d.getAs<StringAttr>("what").str()}});
    function["index_checks"] = std::move(out);
  }
  if (sizes) {
    llvm::json::Array symbols, requirements;
    ArrayRef<int64_t> pairs = sizes.getAs<DenseI64ArrayAttr>("symbols");
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      SizeSymbol s{static_cast<unsigned>(pairs[i]),
                   static_cast<int>(pairs[i + 1])};
      llvm::json::Object o{{"arg", s.argNumber},
                           {"name", getSizeSymbolName(s)}};
      if (s.dim >= 0)
        o["dim"] = s.dim;
      symbols.push_back(std::move(o));
    }
    for (Attribute a : sizes.getAs<ArrayAttr>("requirements")) {
      auto r = cast<DictionaryAttr>(a);
      requirements.push_back(llvm::json::Object{
          {"size",
           llvm::json::Array(r.getAs<DenseI64ArrayAttr>("size").asArrayRef())},
          {"what", r.getAs<StringAttr>("what").str()},
          {"condition", r.getAs<StringAttr>("condition").str()}});
    }
    function["sizes"] = std::move(symbols);
    function["requirements"] = std::move(requirements);
  }
  return function;
}

static LogicalResult writeManifest(ModuleOp module, StringRef dir,
                                   StringRef format, StringRef image,
                                   StringRef chip);

LogicalResult mlir::tang::writeBundleManifest(ModuleOp module, StringRef dir,
                                              StringRef format, StringRef image,
                                              StringRef chip) {
  return writeManifest(module, dir, format, image, chip);
}

/// A Vulkan bundle: the serialised spirv.module and the same manifest.
static LogicalResult exportSpirvImage(ModuleOp module, spirv::ModuleOp spv,
                                      StringRef dir) {
  SmallVector<uint32_t> words;
  if (failed(spirv::serialize(spv, words)))
    return spv.emitOpError() << "cannot be serialised";
  std::string image = "tang_kernels.spv";
  SmallString<256> path(dir);
  llvm::sys::path::append(path, image);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return spv.emitOpError()
           << "cannot write '" << path << "': " << ec.message();
  os.write(reinterpret_cast<const char *>(words.data()),
           words.size() * sizeof(uint32_t));
  return writeManifest(module, dir, "spirv", image, "vulkan");
}

LogicalResult mlir::tang::exportBundle(ModuleOp module, StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError() << "cannot create bundle directory '" << dir
                              << "': " << ec.message();
  SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
  SmallVector<spirv::ModuleOp> spirvModules(module.getOps<spirv::ModuleOp>());
  if (binaries.empty() && spirvModules.size() == 1)
    return exportSpirvImage(module, spirvModules.front(), dir);
  if (binaries.size() != 1)
    return module.emitError()
           << "a bundle needs the compiled kernels: exactly one gpu.binary "
              "(run gpu-module-to-binary) or spirv.module, found "
           << binaries.size() << " and " << spirvModules.size();
  gpu::BinaryOp binary = binaries.front();
  auto object = dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  if (!object || binary.getObjects().size() != 1)
    return binary.emitOpError() << "needs exactly one object";
  StringRef format, ext;
  switch (object.getFormat()) {
  case gpu::CompilationTarget::Assembly:
    format = "ptx", ext = ".ptx";
    break;
  case gpu::CompilationTarget::Binary:
    format = "cubin", ext = ".cubin";
    break;
  case gpu::CompilationTarget::Fatbin:
    format = "fatbin", ext = ".fatbin";
    break;
  default:
    return binary.emitOpError() << "holds an object of a format the CUDA "
                                   "runtime cannot load (use isa, bin or "
                                   "fatbin)";
  }
  std::string chip;
  if (auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
    chip = target.getChip().str();

  if (format == "ptx" &&
      object.getObject().getValue().contains(".extern .func"))
    return binary.emitOpError()
           << "calls external device functions (libdevice math such as "
              "__nv_expf) that were not linked: give the CUDA toolkit "
              "(--tang-lower-cuda=\"toolkit=/usr/local/cuda\" or "
              "$CUDA_HOME)";

  std::string image = (binary.getSymName() + ext).str();
  SmallString<256> imagePath(dir);
  llvm::sys::path::append(imagePath, image);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(imagePath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return binary.emitOpError()
             << "cannot write '" << imagePath << "': " << ec.message();
    os << object.getObject().getValue();
  }

  return writeManifest(module, dir, format, image, chip);
}

static LogicalResult writeManifest(ModuleOp module, StringRef dir,
                                   StringRef format, StringRef image,
                                   StringRef chip) {
  llvm::json::Array functions;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(kKernelFormAttrName))
      continue;
    FailureOr<llvm::json::Object> f = describeFunction(func, dir);
    if (failed(f))
      return failure();
    functions.push_back(std::move(*f));
  }
  llvm::json::Object manifest{{"version", 1},
                              {"format", format.str()},
                              {"image", image.str()},
                              {"chip", chip.str()},
                              {"functions", std::move(functions)}};
  SmallString<256> manifestPath(dir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  std::error_code ec;
  llvm::raw_fd_ostream os(manifestPath, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return module.emitError()
           << "cannot write '" << manifestPath << "': " << ec.message();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return success();
}

namespace {
struct TangExportBundlePass
    : tang::impl::TangExportBundleBase<TangExportBundlePass> {
  using TangExportBundleBase::TangExportBundleBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    if (dir.empty()) {
      getOperation().emitError()
          << "tang-export-bundle: no bundle directory (dir=)";
      return signalPassFailure();
    }
    if (failed(exportBundle(getOperation(), dir)))
      signalPassFailure();
  }
};
} // namespace
