//===- CheckTargetTypes.cpp - --tang-check-target-types ---------*- C++ -*-===//
//
// Refuses the scalar types a portable target does not have, in the terms
// of the program the user wrote (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGCHECKTARGETTYPES
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-check-target-types"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// Why `target` (SPIR-V with the capabilities `caps`) cannot hold or
/// compute scalars of type `t`; empty when it can.
std::string whyUnsupported(PortableTarget target, Type t,
                           const llvm::StringSet<> &caps) {
  std::string why;
  llvm::raw_string_ostream os(why);
  bool is32 = t.isF32() || t.isSignlessInteger(32) || t.isSignlessInteger(1) ||
              t.isIndex();
  if (is32)
    return why;
  if (target == PortableTarget::GLSL) {
    // f16 as 16-bit storage (GL_EXT_shader_16bit_storage), computed in f32.
    if (!t.isF16())
      os << "uses '" << t
         << "', which the GLSL target does not support yet (32-bit int and "
            "float, f16 storage, bool)";
    return why;
  }
  if (target == PortableTarget::WGSL) {
    if (!t.isF16())
      os << "uses '" << t
         << "', which WGSL does not have (32-bit int, f32, f16 and bool "
            "only)";
    return why;
  }
  if (t.isBF16()) {
    os << "uses 'bf16', which the SPIR-V target does not have (no bfloat16 "
          "type in Vulkan compute here); store the program in f16 or f32";
    return why;
  }
  // Each type the SPIR-V target holds as itself, given the capabilities
  // that it needs: without them the upstream conversion would silently
  // widen 8- and 16-bit buffers to 32-bit elements, or fail on an op the
  // program does not contain.
  SmallVector<StringRef, 2> needs;
  if (t.isF16())
    needs = {"Float16", "StorageBuffer16BitAccess"};
  else if (t.isF64())
    needs = {"Float64"};
  else if (t.isSignlessInteger(64))
    needs = {"Int64"};
  else if (t.isSignlessInteger(16))
    needs = {"Int16", "StorageBuffer16BitAccess"};
  else if (t.isSignlessInteger(8))
    needs = {"Int8", "StorageBuffer8BitAccess"};
  else {
    os << "uses '" << t << "', which the SPIR-V target does not support";
    return why;
  }
  if (llvm::all_of(needs, [&](StringRef c) { return caps.contains(c); }))
    return why;
  os << "uses '" << t << "', which needs the SPIR-V capabilit"
     << (needs.size() == 1 ? "y " : "ies ") << llvm::join(needs, " and ")
     << " (add " << (needs.size() == 1 ? "it" : "them") << " to caps=)";
  return why;
}

/// Refuses, before any lowering, a program with scalar types the target
/// does not have: the diagnostic names the operation or argument the user
/// wrote (a tang.index of i64, an f16 argument), not an operation of the
/// kernel form or a failed legalisation; once per type, where it first
/// appears.
struct TangCheckTargetTypesPass
    : tang::impl::TangCheckTargetTypesBase<TangCheckTargetTypesPass> {
  using TangCheckTargetTypesBase::TangCheckTargetTypesBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    llvm::StringSet<> capSet;
    SmallVector<StringRef> list;
    StringRef(caps).split(list, ',', -1, /*KeepEmpty=*/false);
    for (StringRef c : list)
      capSet.insert(c.trim());
    llvm::DenseSet<Type> refused;
    auto check = [&](Type t, function_ref<InFlightDiagnostic()> emit) {
      t = getElementTypeOrSelf(t);
      if (refused.contains(t))
        return false;
      std::string why = whyUnsupported(target, t, capSet);
      if (why.empty())
        return false;
      emit() << why;
      refused.insert(t);
      return true;
    };
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      if (auto f = dyn_cast<func::FuncOp>(op)) {
        for (BlockArgument a : f.getArguments())
          check(a.getType(), [&] {
            return emitError(a.getLoc()) << "argument #" << a.getArgNumber()
                                         << " of @" << f.getName() << " ";
          });
        for (Type t : f.getResultTypes())
          if (check(t, [&] { return f.emitOpError() << "result "; }))
            break;
        return WalkResult::advance();
      }
      for (Type t : op->getResultTypes())
        if (check(t, [&] { return op->emitOpError(); }))
          return WalkResult::advance();
      for (Region &r : op->getRegions())
        for (Block &b : r)
          for (BlockArgument a : b.getArguments())
            if (check(a.getType(), [&] { return op->emitOpError(); }))
              return WalkResult::advance();
      return WalkResult::advance();
    });
    if (!refused.empty())
      signalPassFailure();
  }
};

} // namespace
