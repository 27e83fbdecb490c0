//===- KernelForm.h - kernel shapes of the kernel form ----------*- C++ -*-===//
//
// What the kernel emitters of --convert-tang-to-gpu share: the kernel being
// built and how it is launched, and the shape-keyed emitters that live in
// files of their own.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H
#define TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <optional>

namespace mlir::tang {

/// A kernel and how to launch it.
struct Kernel {
  gpu::GPUFuncOp func;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  /// Dynamic shared memory per block, in bytes.
  int64_t sharedBytes = 0;
};

/// A contraction a tensor-core kernel can compute: `red` is an add-reduction
/// over one index `k` of the product of two reads `a` and `b` of f16 or bf16
/// tensors; it is `op` itself, or the one comprehension nested in the body
/// of `op` (whose other operations are the epilogue, applied per element).
/// `a` uses the parallel index `m` and `b` the parallel index `n` (the last
/// one of `op`); the other parallel indices are batch indices.
struct MmaContraction {
  ComprehensionOp red;
  ReadOp a, b;
  unsigned m, n;
  /// Whether `b`'s last coordinate is `k` (a [.., n, k] operand, the layout
  /// of nn.Linear's weight); otherwise it is `n` (a [.., k, n] operand).
  bool bKContiguous;
  /// The operands' element type (f16 or bf16).
  Type elementType;
  int64_t extentM, extentN, extentK;
};

/// Matches `op` (a function-level comprehension) against the contraction
/// the tensor-core emitter handles; std::nullopt with `why` set otherwise.
std::optional<MmaContraction> matchMmaContraction(ComprehensionOp op,
                                                  std::string &why);

/// Emits `op` as a tensor-core matrix product into `k.func` at `b`, operands
/// staged through shared memory by cp.async: mma.sync.m16n8k16 (sm_80 and
/// up), or with `wgmma` warpgroup wgmma.mma_async (sm_90a).
LogicalResult emitMmaKernel(OpBuilder &b, ComprehensionOp op,
                            const MmaContraction &c, IRMapping &tensors,
                            ValueRange outputs, Kernel &k, bool wgmma);

} // namespace mlir::tang

#endif // TANG_LIB_CONVERSION_TANGTOGPU_KERNELFORM_H
