//===- TangDialect.cpp - tang dialect ---------------------------*- C++ -*-===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::tang;

#include "Tang/Dialect/Tang/IR/TangOpsDialect.cpp.inc"

void TangDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Tang/Dialect/Tang/IR/TangOps.cpp.inc"
      >();
  registerAttributes();
}

/// The dialect's discardable attributes: each has one value kind and one
/// kind of operation it belongs on (TangDialect.td), and the kernel form's
/// are consistent with their function.
LogicalResult TangDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto wrongValue = [&](StringRef expected) {
    return op->emitError() << "'" << name << "' must be " << expected
                           << ", got " << value;
  };
  auto wrongOp = [&](StringRef expected) {
    return op->emitError() << "'" << name << "' belongs on " << expected;
  };

  if (name == kTargetAttrName) {
    if (!isa<TargetAttr>(value))
      return wrongValue("a #tang.target");
    if (!isa<ModuleOp>(op))
      return wrongOp("a module");
    return success();
  }

  if (name == kChunkedAttrName) {
    if (!isa<TensorScanOp>(op))
      return wrongOp("a tang.tensor_scan");
    if (!isa<UnitAttr>(value))
      return wrongValue("a unit attribute");
    return success();
  }

  // On comprehensions.
  if (name == kSavedAttrName || name == kFuseIdAttrName ||
      name == kShapeClassAttrName || name == kTrafficTileAttrName ||
      name == kScheduleSourceAttrName) {
    auto c = dyn_cast<ComprehensionOp>(op);
    if (!c)
      return wrongOp("a tang.comprehension");
    if (name == kSavedAttrName && !isa<UnitAttr>(value))
      return wrongValue("a unit attribute");
    if (name == kFuseIdAttrName && !isa<IntegerAttr>(value))
      return wrongValue("an integer");
    if (name == kShapeClassAttrName) {
      auto s = dyn_cast<StringAttr>(value);
      if (!s || !llvm::is_contained({"pointwise", "row_reduction",
                                     "column_reduction", "narrow_matvec",
                                     "matmul_like", "online_softmax"},
                                    s.getValue()))
        return wrongValue("a shape class (pointwise, row_reduction, "
                          "column_reduction, narrow_matvec, matmul_like or "
                          "online_softmax)");
    }
    if (name == kScheduleSourceAttrName &&
        !(isa<StringAttr>(value) &&
          cast<StringAttr>(value).getValue() == "cache"))
      return wrongValue("\"cache\"");
    if (name == kTrafficTileAttrName) {
      auto tile = dyn_cast<DenseI64ArrayAttr>(value);
      if (!tile)
        return wrongValue("an i64 array");
      if (tile.size() != static_cast<int64_t>(c.getNumIndices()) ||
          llvm::any_of(tile.asArrayRef(), [](int64_t t) { return t < 1; }))
        return op->emitError()
               << "'" << name << "' needs one positive extent per index ("
               << c.getNumIndices() << "), got " << value;
    }
    return success();
  }

  // On the host functions and kernels of the kernel form.
  if (name == kKernelFormAttrName || name == kNumInputsAttrName ||
      name == kTensorMapParamsAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!func)
      return wrongOp("a function");
    int64_t numArgs = func.getNumArguments();
    if (name == kKernelFormAttrName && !isa<UnitAttr>(value))
      return wrongValue("a unit attribute");
    if (name == kNumInputsAttrName) {
      auto n = dyn_cast<IntegerAttr>(value);
      if (!n)
        return wrongValue("an integer");
      if (!op->hasAttr(kKernelFormAttrName))
        return wrongOp("a host function of the kernel form (with '" +
                       kKernelFormAttrName.str() + "')");
      if (n.getInt() < 0 || n.getInt() > numArgs)
        return op->emitError()
               << "'" << name << "' is " << n.getInt()
               << ", but the function takes " << numArgs << " arguments";
    }
    if (name == kTensorMapParamsAttrName) {
      auto params = dyn_cast<DenseI64ArrayAttr>(value);
      if (!params)
        return wrongValue("an i64 array");
      int64_t previous = -1;
      for (int64_t p : params.asArrayRef()) {
        if (p <= previous || p >= numArgs)
          return op->emitError()
                 << "'" << name << "' must list parameter positions in "
                 << "increasing order, each below " << numArgs << ", got "
                 << value;
        previous = p;
      }
    }
    return success();
  }

  // The sizes of the kernel form (written by --convert-tang-to-gpu).
  if (name == kSizesAttrName) {
    auto d = dyn_cast<DictionaryAttr>(value);
    if (!d || !d.getAs<DenseI64ArrayAttr>("symbols") ||
        !d.getAs<ArrayAttr>("shapes") || !d.getAs<ArrayAttr>("requirements"))
      return wrongValue("a dictionary of symbols, shapes and requirements");
    if (!op->hasAttr(kKernelFormAttrName))
      return wrongOp("a host function of the kernel form");
    return success();
  }
  if (name == kDataAttrName) {
    auto data = dyn_cast<DenseElementsAttr>(value);
    if (op->getName().getStringRef() != "memref.alloc" ||
        op->getNumResults() != 1)
      return wrongOp("a memref.alloc");
    auto type = dyn_cast<MemRefType>(op->getResult(0).getType());
    if (!data || !type ||
        data.getType().getShape() != ArrayRef<int64_t>(type.getShape()) ||
        data.getElementType() != type.getElementType())
      return wrongValue("dense elements of the buffer's shape and type");
    return success();
  }
  if (name == kSubgroupLocalBarrierAttrName) {
    if (op->getName().getStringRef() != "gpu.barrier")
      return wrongOp("a gpu.barrier");
    if (!isa<UnitAttr>(value))
      return wrongValue("a unit attribute");
    return success();
  }
  if (name == kShapeAttrName || name == kSizesBufferAttrName) {
    if (op->getName().getStringRef() != "memref.alloc")
      return wrongOp("a memref.alloc");
    if (name == kShapeAttrName && !isa<ArrayAttr>(value))
      return wrongValue("an array of sizes");
    if (name == kSizesBufferAttrName && !isa<UnitAttr>(value))
      return wrongValue("a unit attribute");
    return success();
  }

  if (name == kAliasesAttrName) {
    auto pairs = dyn_cast<DenseI64ArrayAttr>(value);
    auto func = dyn_cast<FunctionOpInterface>(op);
    auto numInputs = op->getAttrOfType<IntegerAttr>(kNumInputsAttrName);
    if (!pairs || pairs.size() % 2)
      return wrongValue("an i64 array of (output, input) pairs");
    if (!func || !numInputs)
      return wrongOp("a host function of the kernel form");
    for (int64_t i = 0; i < pairs.size(); i += 2)
      if (pairs[i] < numInputs.getInt() ||
          pairs[i] >= static_cast<int64_t>(func.getNumArguments()) ||
          pairs[i + 1] < 0 || pairs[i + 1] >= numInputs.getInt() ||
          func.getArgumentTypes()[pairs[i]] !=
              func.getArgumentTypes()[pairs[i + 1]])
        return op->emitError()
               << "'" << name << "' pairs output #" << pairs[i]
               << " with input #" << pairs[i + 1]
               << ": it must pair an output with an input of its type";
    return success();
  }

  if (name == kIndexChecksAttrName) {
    auto checks = dyn_cast<ArrayAttr>(value);
    auto func = dyn_cast<FunctionOpInterface>(op);
    auto numInputs = op->getAttrOfType<IntegerAttr>(kNumInputsAttrName);
    if (!checks)
      return wrongValue("an array of {arg, bound, what} dictionaries");
    if (!func || !numInputs)
      return wrongOp("a host function of the kernel form");
    for (Attribute a : checks) {
      auto d = dyn_cast<DictionaryAttr>(a);
      auto arg = d ? d.getAs<IntegerAttr>("arg") : IntegerAttr();
      auto bound = d ? d.getAs<IntegerAttr>("bound") : IntegerAttr();
      if (!arg || !bound || !d.getAs<StringAttr>("what"))
        return wrongValue("an array of {arg, bound, what} dictionaries");
      int64_t k = arg.getInt();
      auto type = k >= 0 && k < numInputs.getInt()
                      ? dyn_cast<ShapedType>(func.getArgumentTypes()[k])
                      : ShapedType();
      if (!type || !isa<IntegerType>(type.getElementType()))
        return op->emitError() << "'" << name << "' checks argument #" << k
                               << ", which is not an integer input";
      if (bound.getInt() < 1)
        return op->emitError() << "'" << name << "' has the bound "
                               << bound.getInt() << " (at least 1)";
    }
    return success();
  }

  return op->emitError()
         << "unknown discardable attribute '" << name
         << "' (the tang dialect declares tang.target, "
            "tang.saved, tang.chunked, tang.fuse_id, tang.shape_class, "
            "tang.traffic_tile, tang.schedule_source, tang.kernel_form, "
            "tang.num_inputs, tang.tensor_map_params, "
            "tang.sizes, tang.shape, tang.sizes_buffer, "
            "tang.aliases, tang.index_checks and tang.data; "
            "tang.donate on "
            "arguments)";
}

LogicalResult TangDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kDonateAttrName)
    return op->emitError() << "unknown argument attribute '" << name
                           << "' (the tang dialect declares tang.donate)";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << name << "' must be a unit attribute";
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || regionIndex != 0 ||
      !isa<RankedTensorType>(func.getArgumentTypes()[argIndex]))
    return op->emitError() << "'" << name
                           << "' belongs on a tensor argument of a function";
  return success();
}
