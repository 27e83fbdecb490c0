//===- TangToGPU.cpp - the kernel form --------------------------*- C++ -*-===//
//
// --convert-tang-to-gpu turns every function of function-level
// comprehensions into the kernel form shared by all backends:
//
//  * one `gpu.func` per comprehension, in a `gpu.module @tang_kernels`,
//    taking the memrefs it reads and writes; scalar code from the body
//    (BodyEmitter), f16/bf16 computed in f32;
//  * a host `func.func` of the same name taking memrefs (the inputs, then
//    one per result, written in place), allocating the intermediates and
//    launching the kernels in order with `gpu.launch_func`: the grid, the
//    block, the shared memory and the argument order are all there.
//
// Kernel shapes, chosen from the comprehension's schedule and shape:
//
//  * row kernels (a schedule whose last index is shared by the block's
//    threads and whose other indices are spread one per block): every
//    nested reduction that does not depend on the row index is computed
//    once per block, each thread striding the reduced index and the
//    partial carriers combined across the block (subgroup shuffles, then
//    workgroup memory); the row is then written by the threads, striding;
//  * every other comprehension: one thread per parallel point, reductions
//    as loops in registers (correct for every monoid, not yet fast).
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/TangToGPU/TangToGPU.h"

#include "BodyEmitter.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tang {
#define GEN_PASS_DEF_CONVERTTANGTOGPU
#include "Tang/Conversion/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

constexpr int64_t kDefaultBlockSize = 256;

MemRefType getMemRefType(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Converts a value in compute type back to its storage type.
Value toStorage(OpBuilder &b, Location loc, Value v, Type storage) {
  if (v.getType() == storage)
    return v;
  return arith::TruncFOp::create(b, loc, storage, v);
}

/// The tensors `op` reads (in order of first read).
SmallVector<Value> getTensorsRead(ComprehensionOp op) {
  llvm::SetVector<Value> tensors;
  op.walk([&](ReadOp r) { tensors.insert(r.getTensor()); });
  return tensors.takeVector();
}

/// A kernel and how to launch it.
struct Kernel {
  gpu::GPUFuncOp func;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t sharedBytes = 0;
};

class KernelFormBuilder {
public:
  KernelFormBuilder(ModuleOp module, gpu::GPUModuleOp kernels)
      : module(module), kernels(kernels) {}

  LogicalResult convertFunc(func::FuncOp func);

private:
  FailureOr<Kernel> buildKernel(ComprehensionOp op, StringRef name,
                                ArrayRef<Value> inputs);
  LogicalResult emitPointKernel(OpBuilder &b, ComprehensionOp op,
                                IRMapping &tensors, ValueRange outputs,
                                Kernel &k);

  ModuleOp module;
  gpu::GPUModuleOp kernels;
};

FailureOr<Kernel> KernelFormBuilder::buildKernel(ComprehensionOp op,
                                                 StringRef name,
                                                 ArrayRef<Value> inputs) {
  Location loc = op.getLoc();
  SmallVector<Type> argTypes;
  for (Value t : inputs)
    argTypes.push_back(getMemRefType(t.getType()));
  for (Type t : op.getResultTypes())
    argTypes.push_back(getMemRefType(t));
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);

  IRMapping tensors;
  for (auto [t, arg] : llvm::zip(inputs, entry.getArguments()))
    tensors.map(t, arg);
  ValueRange outputs = entry.getArguments().drop_front(inputs.size());

  Kernel k;
  k.func = func;
  if (failed(emitPointKernel(b, op, tensors, outputs, k)))
    return failure();
  gpu::ReturnOp::create(b, loc);
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(k.block[0]), static_cast<int32_t>(k.block[1]),
       static_cast<int32_t>(k.block[2])}));
  return k;
}

/// One thread per parallel point: the linear thread id is decomposed into
/// the parallel indices (row-major), reductions run as loops.
LogicalResult KernelFormBuilder::emitPointKernel(OpBuilder &b,
                                                 ComprehensionOp op,
                                                 IRMapping &tensors,
                                                 ValueRange outputs,
                                                 Kernel &k) {
  Location loc = op.getLoc();
  int64_t total = 1;
  for (int64_t e : op.getParallelExtents())
    total *= e;
  int64_t block = std::min(total, kDefaultBlockSize);
  int64_t grid = (total + block - 1) / block;
  if (grid > std::numeric_limits<int32_t>::max())
    return op.emitOpError()
           << "has " << total << " points, more than one launch covers";
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};

  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bdim = arith::ConstantIndexOp::create(b, loc, block);
  Value lin = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, bdim), tid);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lin,
                            arith::ConstantIndexOp::create(b, loc, total));
  auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());

  IRMapping mapping;
  SmallVector<Value> point(op.getNumParallel());
  Value rest = lin;
  for (int i = static_cast<int>(op.getNumParallel()) - 1; i >= 0; --i) {
    Value ext = arith::ConstantIndexOp::create(b, loc, op.getExtent(i));
    point[i] = arith::RemUIOp::create(b, loc, rest, ext);
    rest = arith::DivUIOp::create(b, loc, rest, ext);
    mapping.map(op.getIndex(i), point[i]);
  }
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  FailureOr<SmallVector<Value>> results =
      emitter.emitSerialReduction(b, op, mapping);
  if (failed(results))
    return failure();
  for (auto [v, out] : llvm::zip(*results, outputs)) {
    Type storage = cast<MemRefType>(out.getType()).getElementType();
    memref::StoreOp::create(b, loc, toStorage(b, loc, v, storage), out, point);
  }
  b.setInsertionPointAfter(ifOp);
  return success();
}

LogicalResult KernelFormBuilder::convertFunc(func::FuncOp func) {
  Location loc = func.getLoc();
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "needs one block for the kernel form";
  SmallVector<Type> argTypes;
  for (Type t : llvm::concat<const Type>(func.getArgumentTypes(),
                                         func.getResultTypes())) {
    auto tt = dyn_cast<RankedTensorType>(t);
    if (!tt || !tt.hasStaticShape())
      return func.emitOpError() << "has a non-tensor or dynamically shaped "
                                   "argument or result ("
                                << t
                                << "): the kernel form needs static "
                                   "tensors";
    if (tt.getElementType().isInteger(1))
      return func.emitOpError() << "has an i1 tensor (" << t
                                << "): the kernel form stores no i1 tensors "
                                   "yet";
    argTypes.push_back(getMemRefType(t));
  }

  OpBuilder b(func);
  auto host = func::FuncOp::create(b, loc, func.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  host->setAttr("tang.kernel_form", b.getUnitAttr());
  // The arguments are the inputs, then one buffer per result.
  host->setAttr("tang.num_inputs", b.getI64IntegerAttr(func.getNumArguments()));
  Block *entry = host.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // Tensors to the memrefs that hold them.
  IRMapping buffers;
  for (auto [t, m] : llvm::zip(func.getArguments(), entry->getArguments()))
    buffers.map(t, m);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  llvm::DenseMap<Value, Value> outputOf;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value out = entry->getArgument(func.getNumArguments() + i);
    if (isa<BlockArgument>(v) || outputOf.count(v))
      return ret.emitOpError()
             << "returns #" << i
             << " an argument or a value already returned: the kernel form "
                "writes each result once, in place";
    outputOf[v] = out;
  }

  SmallVector<Value> temporaries;
  unsigned kernelNo = 0;
  for (Operation &op : func.getBody().front()) {
    if (auto c = dyn_cast<ComprehensionOp>(op)) {
      SmallVector<Value> results;
      for (Value r : c.getResults()) {
        Value m = outputOf.lookup(r);
        if (!m) {
          m = memref::AllocOp::create(b, c.getLoc(),
                                      getMemRefType(r.getType()));
          temporaries.push_back(m);
        }
        buffers.map(r, m);
        results.push_back(m);
      }
      SmallVector<Value> inputs = getTensorsRead(c);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      FailureOr<Kernel> k = buildKernel(c, name, inputs);
      if (failed(k))
        return failure();
      auto cst = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, c.getLoc(), v).getResult();
      };
      SmallVector<Value> args = llvm::map_to_vector(
          inputs, [&](Value t) { return buffers.lookup(t); });
      args.append(results);
      gpu::LaunchFuncOp::create(
          b, c.getLoc(), k->func,
          gpu::KernelDim3{cst(k->grid[0]), cst(k->grid[1]), cst(k->grid[2])},
          gpu::KernelDim3{cst(k->block[0]), cst(k->block[1]), cst(k->block[2])},
          k->sharedBytes ? arith::ConstantIntOp::create(
                               b, c.getLoc(), b.getI32Type(), k->sharedBytes)
                               .getResult()
                         : Value(),
          args);
      continue;
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (c.getType().isIntOrIndexOrFloat())
        continue; // Rematerialised in the kernels that use it.
      return c.emitOpError() << "a tensor constant is not supported by the "
                                "kernel form yet";
    }
    if (isa<func::ReturnOp>(op)) {
      for (Value t : temporaries)
        memref::DeallocOp::create(b, loc, t);
      func::ReturnOp::create(b, loc);
      continue;
    }
    if (isa<ViewOp>(op))
      return op.emitOpError() << "is read directly: the kernel form needs "
                                 "views folded into reads (--canonicalize)";
    return op.emitOpError() << "is not supported by the kernel form";
  }
  func.erase();
  return success();
}

struct ConvertTangToGPUPass
    : tang::impl::ConvertTangToGPUBase<ConvertTangToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Fold views into reads first: kernels read the source tensors.
    if (failed(applyPatternsGreedily(module, RewritePatternSet(&getContext()))))
      return signalPassFailure();

    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && !f.getBody().getOps<ComprehensionOp>().empty())
        funcs.push_back(f);
    if (funcs.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "tang_kernels");
    KernelFormBuilder builder(module, kernels);
    for (func::FuncOp f : funcs)
      if (failed(builder.convertFunc(f)))
        return signalPassFailure();
  }
};

} // namespace
