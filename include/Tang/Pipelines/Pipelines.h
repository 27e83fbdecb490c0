//===- Pipelines.h - tang's pass pipelines ----------------------*- C++ -*-===//

#ifndef TANG_PIPELINES_PIPELINES_H
#define TANG_PIPELINES_PIPELINES_H

#include "Tang/Analysis/KernelChoice.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::tang {

/// Options of --tang-lower-cuda.
struct TangLowerCudaOptions : public PassPipelineOptions<TangLowerCudaOptions> {
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Run the tang rewrites first (--tang-chunk-affine-scan, "
                     "--tang-fuse, --tang-online-softmax, "
                     "--tang-triangular-scan)"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target chip: the PTX instruction set and the device "
                     "model (#tang.target) the schedule and kernels are "
                     "sized by: sm_75, sm_80, sm_86, sm_89, sm_90 or sm_90a; "
                     "a module's own tang.target for the chip is kept"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> features{*this, "features",
                                            llvm::cl::desc("PTX features"),
                                            llvm::cl::init("+ptx80")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimisation level (0-3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel image: isa (PTX, no CUDA needed), bin (cubin, "
                     "runs ptxas) or fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit path for ptxas (format=bin/fatbin)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Also write the kernels and their launch sequence to "
                     "this directory (see docs/Bundle.md)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> tma{
      *this, "tma",
      llvm::cl::desc("On sm_90a, load tensor-core operand tiles by bulk "
                     "tensor copies (TMA) where their views allow it"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> warpSpecialize{
      *this, "warp-specialize",
      llvm::cl::desc("With tma: persistent tensor-core kernels with a "
                     "producer warpgroup (flash attention: its grid "
                     "persistent)"),
      llvm::cl::init(true)};
  PassOptions::Option<SplitSoftmaxMmaOption> splitSoftmaxMma{
      *this, "split-softmax-mma",
      llvm::cl::desc("Decode attention (split_softmax kernels) with its "
                     "products on mma.sync (--convert-tang-to-gpu's "
                     "split-softmax-mma: auto, on, off)"),
      llvm::cl::init(SplitSoftmaxMmaOption::Auto),
      llvm::cl::values(
          clEnumValN(SplitSoftmaxMmaOption::Auto, "auto",
                     "wherever the shape allows (the default)"),
          clEnumValN(SplitSoftmaxMmaOption::On, "on",
                     "the same, with a remark where the "
                     "shape does not allow it"),
          clEnumValN(SplitSoftmaxMmaOption::On, "true", "the same as on"),
          clEnumValN(SplitSoftmaxMmaOption::Off, "off",
                     "never (the lane kernel)"),
          clEnumValN(SplitSoftmaxMmaOption::Off, "false", "the same as off"))};
  PassOptions::Option<int64_t> splitSoftmaxBlocksPerSm{
      *this, "split-softmax-blocks-per-sm",
      llvm::cl::desc("The blocks per multiprocessor decode attention's key "
                     "splits aim at (0: the kernel's own; "
                     "--convert-tang-to-gpu's option of that name)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> tf32{
      *this, "tf32",
      llvm::cl::desc("Contractions of f32 operands on tensor cores as tf32 "
                     "(sm_80 and up; off: full f32 precision)"),
      llvm::cl::init(false)};
  PassOptions::Option<TileSource> tileSource{
      *this, "tile-source",
      llvm::cl::desc("Matmul-like output tiles from `heuristic` or "
                     "`traffic-bound` (--tang-schedule's tile-source)"),
      llvm::cl::init(TileSource::Heuristic),
      llvm::cl::values(clEnumValN(TileSource::Heuristic, "heuristic",
                                  "the shape class's heuristic"),
                       clEnumValN(TileSource::TrafficBound, "traffic-bound",
                                  "the traffic bound's certified tile"))};
  PassOptions::Option<std::string> scheduleCache{
      *this, "schedule-cache",
      llvm::cl::desc("A tuning cache of measured schedules (docs/Tuning.md; "
                     "--tang-schedule's cache)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> scheduleCandidates{
      *this, "schedule-candidates",
      llvm::cl::desc("Write each comprehension's candidate schedules to this "
                     "JSON file (--tang-schedule's candidates; bench/tune.py)"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> scheduleCandidatesMax{
      *this, "schedule-candidates-max",
      llvm::cl::desc("With schedule-candidates: at most this many per "
                     "comprehension (--tang-schedule's max-candidates)"),
      llvm::cl::init(24)};
};

/// tang IR -> (fusion) -> schedules -> the kernel form -> NVVM -> PTX/cubin
/// in `gpu.binary`, host launch sequence left in the kernel form.
void buildTangLowerCudaPipeline(OpPassManager &pm,
                                const TangLowerCudaOptions &options);

/// The first half of --tang-lower-cuda: the chip's tang.target, (fusion,)
/// the schedule and the CUDA kernel form (gpu, scf, memref, nvgpu, nvvm
/// ops in the kernels; host launches), canonicalised; no NVVM lowering.
void addTangCudaKernelForm(OpPassManager &pm,
                           const TangLowerCudaOptions &options);

/// The options every portable pipeline but C's has: fusion first, and the
/// row kernels of the portable device model.
template <typename Derived>
struct PortablePipelineOptions : public PassPipelineOptions<Derived> {
  mlir::detail::PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Run the tang rewrites first (--tang-chunk-affine-scan, "
                     "--tang-fuse, --tang-online-softmax, "
                     "--tang-triangular-scan)"),
      llvm::cl::init(false)};
  mlir::detail::PassOptions::Option<bool> rowKernels{
      *this, "row-kernels",
      llvm::cl::desc("Schedule for the portable device model (#tang.target "
                     "chip \"portable\") and build row kernels: a workgroup "
                     "per row of a reduction, its threads combined in "
                     "workgroup memory; off: one thread per point"),
      llvm::cl::init(true)};
};

/// Options of --tang-lower-spirv.
struct TangLowerSpirvOptions
    : public PortablePipelineOptions<TangLowerSpirvOptions> {
  PassOptions::Option<std::string> version{
      *this, "version", llvm::cl::desc("SPIR-V version (v1.0 to v1.6)"),
      llvm::cl::init("v1.3")};
  PassOptions::Option<std::string> caps{
      *this, "caps",
      llvm::cl::desc("SPIR-V capabilities the target has, comma-separated "
                     "(the module declares those it uses: f16 buffers need "
                     "Float16 and StorageBuffer16BitAccess, i64 Int64, f64 "
                     "Float64)"),
      llvm::cl::init("Shader,Float16,StorageBuffer16BitAccess,Int64")};
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Also write the .spv and the launch sequence to this "
                     "directory (see docs/Bundle.md, format spirv)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("Contractions on KHR_cooperative_matrix (16x16 tiles, "
                     "one 32-thread subgroup each): SPIR-V 1.6 with the "
                     "CooperativeMatrixKHR, VulkanMemoryModel, Float16 and "
                     "StorageBuffer16BitAccess capabilities and their "
                     "extensions; for devices that have them (lavapipe does "
                     "not)"),
      llvm::cl::init(false)};
};

/// tang IR -> (fusion) -> the kernel form (row kernels, else one thread per
/// point) -> a Vulkan compute spirv.module; host launch sequence left in the
/// kernel form.
LogicalResult buildTangLowerSpirvPipeline(OpPassManager &pm,
                                          const TangLowerSpirvOptions &options);

/// Options of --tang-lower-opencl.
struct TangLowerOpenCLOptions
    : public PortablePipelineOptions<TangLowerOpenCLOptions> {
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Write tang_kernels.cl and the launch sequence to this "
                     "directory (format opencl); without it, print the "
                     "OpenCL C to stdout"),
      llvm::cl::init("")};
};

/// tang IR -> (fusion) -> the kernel form (row kernels, else one thread per
/// point) -> OpenCL C 1.2 (a bundle, or stdout).
void buildTangLowerOpenCLPipeline(OpPassManager &pm,
                                  const TangLowerOpenCLOptions &options);

/// Options of --tang-lower-glsl.
struct TangLowerGLSLOptions
    : public PortablePipelineOptions<TangLowerGLSLOptions> {
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Write a <kernel>.comp per kernel, tang_kernels.spv "
                     "(compiled by glslangValidator, linked by spirv-link) "
                     "and the launch sequence to this directory (format "
                     "spirv, run by the Vulkan host); without it, print the "
                     "GLSL to stdout"),
      llvm::cl::init("")};
};

/// tang IR -> (fusion) -> the kernel form (row kernels, else one thread per
/// point) -> GLSL compute shaders, compiled by glslangValidator and linked by
/// spirv-link into a SPIR-V bundle (the Vulkan host runs it), or the shaders on
/// stdout.
void buildTangLowerGLSLPipeline(OpPassManager &pm,
                                const TangLowerGLSLOptions &options);

/// Options of --tang-lower-wgsl.
struct TangLowerWGSLOptions
    : public PortablePipelineOptions<TangLowerWGSLOptions> {
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Write tang_kernels.wgsl and the launch sequence to "
                     "this directory (format wgsl, run by runtime/webgpu); "
                     "without it, print the WGSL to stdout"),
      llvm::cl::init("")};
};

/// tang IR -> (fusion) -> the kernel form (row kernels, else one thread per
/// point) -> one WGSL module (a bundle run by runtime/webgpu on Dawn, or
/// stdout).
void buildTangLowerWGSLPipeline(OpPassManager &pm,
                                const TangLowerWGSLOptions &options);

/// Options of --tang-lower-metal: those of --tang-lower-opencl, and the
/// matrix units.
struct TangLowerMetalOptions
    : public PortablePipelineOptions<TangLowerMetalOptions> {
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Write tang_kernels.metal and the launch sequence to "
                     "this directory (format metal); without it, print the "
                     "source to stdout"),
      llvm::cl::init("")};
  PassOptions::Option<bool> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("Contractions on simdgroup_matrix (8x8 tiles, one "
                     "32-thread SIMD group each), which every Apple GPU "
                     "Metal 2.3 runs on has"),
      llvm::cl::init(true)};
};

/// tang IR -> (fusion) -> the kernel form (row kernels, else one thread per
/// point) -> Metal Shading Language (a bundle, or stdout). Same options as
/// --tang-lower-opencl. No Metal compiler runs here: the tests lint the
/// output as C++ against a stub metal_stdlib.
void buildTangLowerMetalPipeline(OpPassManager &pm,
                                 const TangLowerMetalOptions &options);

/// Options of --tang-lower-c: those of --tang-lower-opencl, and the scalar
/// emulation of subgroup matrices.
struct TangLowerCOptions : public PassPipelineOptions<TangLowerCOptions> {
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Run the tang rewrites first (--tang-chunk-affine-scan, "
                     "--tang-fuse, --tang-online-softmax, "
                     "--tang-triangular-scan)"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> bundle{
      *this, "bundle",
      llvm::cl::desc("Write tang_kernels.c and the launch sequence to this "
                     "directory (format c); without it, print the source to "
                     "stdout"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("Emit the matrix-unit kernels of the portable backends "
                     "(subgroup matrices in tiles of this size: 16 as for "
                     "SPIR-V, 8 as for Metal) with the subgroup matrix "
                     "operations emulated by scalar loops, which checks "
                     "those kernels on the CPU; 0: plain kernels"),
      llvm::cl::init(0)};
};

/// tang IR -> (fusion) -> the kernel form (one thread per point) -> C11 with
/// a launcher per kernel (a bundle, or stdout).
void buildTangLowerCPipeline(OpPassManager &pm,
                             const TangLowerCOptions &options);

/// Registers tang's pipelines with the pass registry.
void registerTangPipelines();

} // namespace mlir::tang

#endif // TANG_PIPELINES_PIPELINES_H
