//===- TangTargets.cpp - the device model's known chips ---------*- C++ -*-===//
//
// The one table of device facts. The H200's entry is
// bench/devices/h200.json's (bench/measure_device.py: multiprocessors and L2
// read from the device, peaks computed from its clocks and widths); the
// others are the vendors' published figures for the named device, which no
// benchmark here has checked. A device missing from the table (or one whose
// facts differ, e.g. another SKU of the same chip) is described by writing
// its #tang.target on the module.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tang;

static constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

static const TargetFacts kTargets[] = {
    // chip, device, SMs, shared per block / per SM, registers per SM, warp,
    // threads per block, tensor cores, TMA, clusters, L2, DRAM bytes/s,
    // 16-bit tensor ops/s, f32 ops/s.
    {"sm_75", "NVIDIA T4", 40, 64 * KiB, 64 * KiB, 65536, 32, 1024,
     TensorCoreKind::None, false, false, 4 * MiB, 320'000'000'000,
     65'000'000'000'000, 8'100'000'000'000},
    {"sm_80", "NVIDIA A100-SXM4-80GB", 108, 163 * KiB, 164 * KiB, 65536, 32,
     1024, TensorCoreKind::MmaSync, false, false, 40 * MiB, 2'039'000'000'000,
     312'000'000'000'000, 19'500'000'000'000},
    {"sm_86", "NVIDIA A10", 72, 99 * KiB, 100 * KiB, 65536, 32, 1024,
     TensorCoreKind::MmaSync, false, false, 6 * MiB, 600'000'000'000,
     125'000'000'000'000, 31'200'000'000'000},
    {"sm_89", "NVIDIA L4", 58, 99 * KiB, 100 * KiB, 65536, 32, 1024,
     TensorCoreKind::MmaSync, false, false, 48 * MiB, 300'000'000'000,
     121'000'000'000'000, 30'300'000'000'000},
    // sm_90 without the architecture-specific features: no wgmma.
    {"sm_90", "NVIDIA H200", 132, 227 * KiB, 228 * KiB, 65536, 32, 1024,
     TensorCoreKind::MmaSync, true, true, 60 * MiB, 4'814'304'000'000,
     1'070'530'560'000'000, 66'908'160'000'000},
    {"sm_90a", "NVIDIA H200", 132, 227 * KiB, 228 * KiB, 65536, 32, 1024,
     TensorCoreKind::Wgmma, true, true, 60 * MiB, 4'814'304'000'000,
     1'070'530'560'000'000, 66'908'160'000'000},
    // The portable backends (Vulkan, WebGPU, OpenCL, Metal): the limits
    // every device they run on has -- WebGPU's default 256 invocations and
    // 16 KiB of workgroup storage, Vulkan's 16 KiB -- no subgroup size
    // assumed (warp 1: threads combine in workgroup memory), one element
    // per access (the printed languages take scalars). The compute units
    // are a guess (they size nothing the portable kernels use).
    {"portable", "any Vulkan, WebGPU, OpenCL or Metal device", 16, 16 * KiB,
     16 * KiB, 16384, 1, 256, TensorCoreKind::None, false, false, 0, 0, 0, 0,
     1},
};

ArrayRef<TargetFacts> mlir::tang::getKnownTargets() { return kTargets; }

const TargetFacts *mlir::tang::lookupTarget(StringRef chip) {
  const auto *it = llvm::find_if(
      kTargets, [&](const TargetFacts &t) { return t.chip == chip; });
  return it == std::end(kTargets) ? nullptr : it;
}

std::string mlir::tang::getKnownChipList() {
  return llvm::join(
      llvm::map_range(kTargets,
                      [](const TargetFacts &t) -> StringRef { return t.chip; }),
      ", ");
}

TargetAttr mlir::tang::getTargetAttr(MLIRContext *ctx, const TargetFacts &f) {
  return TargetAttr::get(ctx, f.chip, f.device, f.smCount, f.sharedPerBlock,
                         f.sharedPerSm, f.registersPerSm, f.warpSize,
                         f.maxThreads, f.tensorCores, f.tma, f.clusters,
                         f.l2Bytes, f.dramBytesPerS, f.tensorOpsPerS,
                         f.fp32OpsPerS, f.vectorBytes);
}

TargetAttr mlir::tang::getTarget(Operation *op) {
  for (Operation *at = op; at; at = at->getParentOp())
    if (auto target = at->getAttrOfType<TargetAttr>(kTargetAttrName))
      return target;
  return getTargetAttr(op->getContext(), *lookupTarget(kDefaultChip));
}
