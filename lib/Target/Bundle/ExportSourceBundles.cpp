//===- ExportSourceBundles.cpp - bundles of printed kernels -----*- C++ -*-===//
//
// The bundle writers of the text backends: the printed source (and for
// GLSL, the SPIR-V that glslangValidator and spirv-link make of it) and
// manifest.json, or with no directory the source on stdout. External tools
// run here, never inside a printer.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Bundle/ExportBundle.h"
#include "Tang/Target/Passes.h"
#include "Tang/Target/Printers/Printers.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace mlir::tang;

namespace mlir::tang {
#define GEN_PASS_DEF_TANGEXPORTGLSLBUNDLE
#define GEN_PASS_DEF_TANGEXPORTSOURCEBUNDLE
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-export-source-bundle"

/// Runs `program` (found on PATH) with `args`; the error names the tool.
static LogicalResult runTool(Operation *at, StringRef program,
                             ArrayRef<StringRef> args, StringRef package) {
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(program);
  if (!path)
    return at->emitError() << program << " not found on PATH (Debian package "
                           << package << ")";
  SmallVector<StringRef> argv{*path};
  argv.append(args.begin(), args.end());
  std::string message;
  // Its progress output (glslangValidator names each file) stays off
  // tang-opt's stdout; errors come back through the exit code.
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(""),
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects, 0, 0,
                                     &message);
  if (rc != 0)
    return at->emitError() << program << " failed (exit " << rc << ")"
                           << (message.empty() ? "" : ": ") << message
                           << "; run it on the printed source to see why";
  return success();
}

/// Drops the `BuiltIn WorkgroupSize` decoration glslang puts on each
/// shader's gl_WorkGroupSize constant. Such a decoration overrides the
/// LocalSize of every entry point of the module, so once spirv-link puts
/// kernels of different block sizes in one module, drivers run them all
/// with one of the sizes (lavapipe took the last: a 96-thread copy ran 16
/// threads). Without it each entry point keeps its own LocalSize, and the
/// constant, still holding its shader's size, serves gl_WorkGroupSize.
static LogicalResult stripWorkgroupSizeBuiltins(ModuleOp module,
                                                StringRef path) {
  constexpr uint32_t kMagic = 0x07230203, kOpDecorate = 71, kBuiltIn = 11,
                     kWorkgroupSize = 25;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return module.emitError()
           << "cannot read '" << path << "': " << file.getError().message();
  StringRef bytes = (*file)->getBuffer();
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  if (words.size() < 5 || words[0] != kMagic)
    return module.emitError() << "'" << path << "' is not SPIR-V";
  std::vector<uint32_t> kept(words.begin(), words.begin() + 5);
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xFFFF;
    if (count == 0 || i + count > words.size())
      return module.emitError() << "'" << path << "' is truncated SPIR-V";
    bool drop = opcode == kOpDecorate && count == 4 &&
                words[i + 2] == kBuiltIn && words[i + 3] == kWorkgroupSize;
    if (!drop)
      kept.insert(kept.end(), words.begin() + i, words.begin() + i + count);
    i += count;
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return module.emitError()
           << "cannot write '" << path << "': " << ec.message();
  out.write(reinterpret_cast<const char *>(kept.data()), kept.size() * 4);
  return success();
}

namespace {
/// Writes a GLSL bundle: one <kernel>.comp per kernel, compiled by
/// glslangValidator and linked by spirv-link into tang_kernels.spv (one
/// entry point per kernel), described as a SPIR-V bundle that the Vulkan
/// host runs.
struct TangExportGLSLBundlePass
    : tang::impl::TangExportGLSLBundleBase<TangExportGLSLBundlePass> {
  using TangExportGLSLBundleBase::TangExportGLSLBundleBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() != 1) {
      module.emitError() << "a GLSL bundle needs exactly one gpu.module";
      return signalPassFailure();
    }
    SmallVector<std::pair<std::string, std::string>> shaders;
    if (failed(translateKernelsToGLSL(kernels.front(), shaders)))
      return signalPassFailure();
    if (dir.empty()) {
      for (auto &[name, text] : shaders)
        llvm::outs() << text << "\n";
      return;
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError() << "cannot create bundle directory '" << dir
                         << "': " << ec.message();
      return signalPassFailure();
    }
    SmallVector<std::string> spvs;
    for (auto &[name, text] : shaders) {
      SmallString<256> comp(dir), spv(dir);
      llvm::sys::path::append(comp, name + ".comp");
      llvm::sys::path::append(spv, name + ".spv");
      std::error_code ec;
      llvm::raw_fd_ostream file(comp, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        module.emitError() << "cannot write '" << comp << "': " << ec.message();
        return signalPassFailure();
      }
      file << text;
      file.close();
      if (failed(runTool(module, "glslangValidator",
                         {"-V", "--target-env", "vulkan1.1", "-e", name,
                          "--source-entrypoint", "main", "-o", spv, comp},
                         "glslang-tools")) ||
          failed(stripWorkgroupSizeBuiltins(module, spv)))
        return signalPassFailure();
      spvs.push_back(std::string(spv));
    }
    SmallString<256> linked(dir);
    llvm::sys::path::append(linked, "tang_kernels.spv");
    SmallVector<StringRef> args(spvs.begin(), spvs.end());
    args.append({"-o", linked});
    if (failed(runTool(module, "spirv-link", args, "spirv-tools")) ||
        failed(writeBundleManifest(module, dir, "spirv", "tang_kernels.spv",
                                   "vulkan")))
      return signalPassFailure();
  }
};
} // namespace

namespace {
/// What a single-source bundle of one printed language holds.
struct SourceBundle {
  LogicalResult (*translate)(gpu::GPUModuleOp, raw_ostream &);
  StringRef image, format, chip;
};

SourceBundle getSourceBundle(SourceLanguage language) {
  switch (language) {
  case SourceLanguage::C:
    return {translateKernelsToC, "tang_kernels.c", "c", "c11"};
  case SourceLanguage::Metal:
    return {translateKernelsToMetal, "tang_kernels.metal", "metal", "msl"};
  case SourceLanguage::WGSL:
    return {translateKernelsToWGSL, "tang_kernels.wgsl", "wgsl", "webgpu"};
  default:
    return {translateKernelsToOpenCL, "tang_kernels.cl", "opencl", "opencl1.2"};
  }
}

/// Writes the bundle of one source file (OpenCL C, C, Metal or WGSL) and
/// its manifest, or prints the source when no directory is given.
struct TangExportSourceBundlePass
    : tang::impl::TangExportSourceBundleBase<TangExportSourceBundlePass> {
  using TangExportSourceBundleBase::TangExportSourceBundleBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    SourceBundle bundle = getSourceBundle(language);
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() != 1) {
      module.emitError() << "a " << bundle.format
                         << " bundle needs exactly one gpu.module (the "
                            "kernel form), found "
                         << kernels.size();
      return signalPassFailure();
    }
    std::string source;
    llvm::raw_string_ostream os(source);
    if (failed(bundle.translate(kernels.front(), os)))
      return signalPassFailure();
    if (dir.empty()) {
      llvm::outs() << source;
      return;
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError() << "cannot create bundle directory '" << dir
                         << "': " << ec.message();
      return signalPassFailure();
    }
    SmallString<256> path(dir);
    llvm::sys::path::append(path, bundle.image);
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "cannot write '" << path << "': " << ec.message();
      return signalPassFailure();
    }
    file << source;
    if (failed(writeBundleManifest(module, dir, bundle.format, bundle.image,
                                   bundle.chip)))
      signalPassFailure();
  }
};
} // namespace
