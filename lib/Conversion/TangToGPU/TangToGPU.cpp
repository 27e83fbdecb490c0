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
// The host side lives here (this file): the host function, the buffers, the
// launches, and the kernel patterns tried per comprehension. The kernels are
// built by the patterns (KernelForm.h), one kind per file: FlashKernel.cpp,
// ScoreKernel.cpp, MmaKernel.cpp, SubgroupMmaKernel.cpp, RowKernel.cpp.
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/TangToGPU/TangToGPU.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "Tang/Transforms/CollapseReductions.h"

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Analysis/ShapeClass.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tang-to-gpu"

namespace mlir::tang {
#define GEN_PASS_DEF_CONVERTTANGTOGPU
#include "Tang/Conversion/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The host side of a tensor-map parameter: nvgpu.tma.create.descriptor
/// over `buffer` (what the bundle exporter reads), cast to the kernel
/// parameter's type.
Value createTensorMap(OpBuilder &b, Location loc, Value buffer,
                      const TensorMapParam &t) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<MemRefType>(buffer.getType());
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(type.getElementType(), Attribute()),
      buffer);
  SmallVector<Value> box = llvm::map_to_vector(t.box, [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  });
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto descriptor = nvgpu::TensorMapDescriptorType::get(
      ctx, MemRefType::get(t.box, type.getElementType(), AffineMap(), wg),
      t.swizzleBytes == 128 ? nvgpu::TensorMapSwizzleKind::SWIZZLE_128B
                            : nvgpu::TensorMapSwizzleKind::SWIZZLE_64B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  Value d =
      nvgpu::TmaCreateDescriptorOp::create(b, loc, descriptor, unranked, box);
  return UnrealizedConversionCastOp::create(b, loc,
                                            LLVM::LLVMPointerType::get(ctx), d)
      .getResult(0);
}

/// A size as the kernel form records it: [constant, coefficient of symbol
/// 0, 1, ...] (trailing zeros omitted).
DenseI64ArrayAttr encodeSize(Builder &b, const Size &s) {
  SmallVector<int64_t> v{s.constant};
  v.append(s.coeffs.begin(), s.coeffs.end());
  while (v.size() > 1 && v.back() == 0)
    v.pop_back();
  return b.getDenseI64ArrayAttr(v);
}

/// The sizes of a host function whose tang function has symbolic sizes:
/// the symbols' values on the host (index arguments, memref.dim of input
/// buffers) and the buffer of their values (i32) that every kernel takes as
/// its last parameter.
struct HostSizes {
  SmallVector<SizeSymbol> symbols;
  SmallVector<Value> values;
  Value buffer;

  /// `s` as a host index value.
  Value get(OpBuilder &b, Location loc, const Size &s) const {
    return buildSize(b, loc, s, values);
  }
  /// The type of the sizes buffer.
  MemRefType getBufferType(MLIRContext *ctx) const {
    return MemRefType::get(
        {std::max<int64_t>(1, static_cast<int64_t>(symbols.size()))},
        IntegerType::get(ctx, 32));
  }
};

/// The sizes of `tensor` (a value of the tang function), one per dimension.
SmallVector<Size> getShapeSizes(Value tensor) {
  SmallVector<Size> shape;
  for (int64_t d = 0, e = cast<RankedTensorType>(tensor.getType()).getRank();
       d < e; ++d)
    shape.push_back(*getDimSize(tensor, d));
  return shape;
}

/// Converts functions of comprehensions into host functions launching one
/// kernel per comprehension, each built by the first kernel pattern that
/// matches it.
class KernelFormBuilder {
public:
  KernelFormBuilder(gpu::GPUModuleOp kernels, const KernelOptions &options,
                    const KernelPatternSet &patterns)
      : kernels(kernels), options(options), patterns(patterns) {}

  LogicalResult convertFunc(func::FuncOp func);

private:
  /// A softmax_norm comprehension after `c` (an online_softmax reduction)
  /// over the same keys, indexed by c's parallel indices but the value
  /// column, whose scores are c's: the running max and sum a flash kernel
  /// for `c` computes anyway.
  ComprehensionOp findStatistics(ComprehensionOp c);
  /// A later add reduction with nested reductions over the same rows and
  /// keys as `c` (the same extents but the last parallel one) that reads
  /// nothing made after `c`: a candidate for the score kernel of `c`, which
  /// checks that its dot products are among c's.
  ComprehensionOp findScoreSibling(ComprehensionOp c);
  /// The kernel `name` for `op`, reading `inputs`. `sibling`: a
  /// comprehension whose results the kernel may compute too
  /// (Kernel::wroteSibling): the softmax statistics of an online_softmax
  /// reduction (findStatistics), or a second score reduction
  /// (findScoreSibling). `inputs` covers both.
  FailureOr<Kernel> buildKernel(ComprehensionOp op, const KernelChoice &choice,
                                StringRef name, ArrayRef<Value> inputs,
                                ComprehensionOp sibling = {});
  /// A kernel function `name` in the kernel module, `b` at its start.
  gpu::GPUFuncOp createKernelFunc(OpBuilder &b, Location loc, StringRef name,
                                  TypeRange argTypes);
  /// Ends `k`'s function (`b` at its end) and records its block size.
  void finishKernel(OpBuilder &b, Location loc, Kernel &k);
  /// For a function with symbolic sizes: the kernel `func`'s sizes (its
  /// last parameter), its leading parameters holding `params` (tensors of
  /// the tang function; those with a `?` dimension flat).
  std::unique_ptr<KernelSizes> addKernelSizes(gpu::GPUFuncOp func,
                                              ArrayRef<Value> params,
                                              unsigned numScratch = 0);
  /// The kernel parameter types for `params` (tensors), then the sizes
  /// buffer when the function has symbolic sizes.
  SmallVector<Type> getKernelParamTypes(ArrayRef<Value> params);
  /// A kernel `name` of one shape for `op` (a scan or a scatter: no kernel
  /// patterns), reading `inputs` and writing `results` (tensors of the tang
  /// function, held on the host by `buffers` and `outputs`): `emit` builds
  /// its body given the tensors' kernel buffers and its outputs; then `b`
  /// launches it.
  using BodyKernelFn = function_ref<LogicalResult(OpBuilder &, IRMapping &,
                                                  ValueRange, Kernel &)>;
  LogicalResult buildBodyKernel(OpBuilder &b, Operation *op, StringRef name,
                                ArrayRef<Value> inputs, ValueRange results,
                                ValueRange outputs, const IRMapping &buffers,
                                BodyKernelFn emit);
  /// For `func` with symbolic sizes: `hostSizes` (the symbols' values at
  /// the start of `host` and the sizes buffer), and the host's tang.sizes
  /// (symbols, argument shapes, `requirements`).
  LogicalResult buildHostSizes(func::FuncOp func, func::FuncOp host,
                               ArrayRef<SizeRequirement> requirements);
  /// A temporary buffer for the tang tensor `r` (its `?` dimensions sized
  /// on the host).
  Value allocateTemporary(OpBuilder &b, Location loc, Value r);
  /// The launch operands for kernel parameters `buffers`: a buffer with a
  /// `?` dimension flattened (its kernel parameter is 1-D), then the sizes
  /// buffer, when the function has symbolic sizes.
  SmallVector<Value> getLaunchArgs(OpBuilder &b, Location loc,
                                   ArrayRef<Value> buffers);

  gpu::GPUModuleOp kernels;
  /// The sizes of the host function being built, if it has symbolic ones.
  std::optional<HostSizes> hostSizes;
  const KernelOptions &options;
  const KernelPatternSet &patterns;
};

FailureOr<Kernel> KernelFormBuilder::buildKernel(ComprehensionOp op,
                                                 const KernelChoice &choice,
                                                 StringRef name,
                                                 ArrayRef<Value> inputs,
                                                 ComprehensionOp sibling) {
  Location loc = op.getLoc();
  SmallVector<Value> params(inputs);
  llvm::append_range(params, op.getResults());
  if (sibling)
    llvm::append_range(params, sibling.getResults());
  OpBuilder b(op.getContext());
  gpu::GPUFuncOp func =
      createKernelFunc(b, loc, name, getKernelParamTypes(params));
  Block &entry = func.getBody().front();
  std::unique_ptr<KernelSizes> sizes = addKernelSizes(func, params);

  IRMapping tensors;
  for (auto [t, arg] : llvm::zip(inputs, entry.getArguments()))
    tensors.map(t, arg);
  // A copy: workgroup attributions added later append block arguments.
  SmallVector<Value> outputs(
      entry.getArguments().slice(inputs.size(), params.size() - inputs.size()));
  SmallVector<Value> siblingOutputs;
  if (sibling) {
    siblingOutputs.assign(outputs.begin() + op.getNumResults(), outputs.end());
    outputs.resize(op.getNumResults());
  }

  Kernel k;
  k.func = func;
  k.sizes = sizes.get();
  // Scratch parameters go after the tensors, before the sizes buffer and
  // any tensor maps.
  auto addScratch = [&](MemRefType type) -> Value {
    assert(k.tensorMaps.empty() && k.followUps.empty() &&
           "scratch buffers come before tensor maps and follow-up kernels");
    unsigned at = static_cast<unsigned>(params.size() + k.scratch.size());
    // Inserting one argument into a function of arguments only succeeds.
    (void)func.insertArgument(at, type, DictionaryAttr(), loc);
    k.scratch.push_back(type);
    return func.getArgument(at);
  };
  SmallVector<std::unique_ptr<KernelSizes>> followUpSizes;
  auto addFollowUp = [&]() -> Kernel & {
    std::string followName = (name + "_" + Twine(k.followUps.size() + 1)).str();
    OpBuilder fb(op.getContext());
    Kernel &f = k.followUps.emplace_back();
    f.func = createKernelFunc(fb, loc, followName, func.getArgumentTypes());
    // The same parameters: the tensors (flat ones too), then the scratch.
    std::unique_ptr<KernelSizes> fs =
        addKernelSizes(f.func, params, k.scratch.size());
    f.sizes = fs.get();
    if (fs)
      followUpSizes.push_back(std::move(fs));
    return f;
  };
  KernelRequest request{b,          op,         choice,         tensors,
                        outputs,    sibling,    siblingOutputs, k,
                        addScratch, addFollowUp};
  KernelMatch match = KernelMatch::NoMatch;
  for (const std::unique_ptr<KernelPattern> &pattern : patterns) {
    match = pattern->matchAndBuild(request);
    if (match == KernelMatch::Error)
      return failure();
    if (match == KernelMatch::Built) {
      LLVM_DEBUG(llvm::dbgs() << "[" << pattern->getName() << "] " << name
                              << " at " << loc << "\n");
      break;
    }
  }
  if (match != KernelMatch::Built)
    return op.emitOpError() << "no kernel pattern matches it";
  finishKernel(b, loc, k);
  for (Kernel &f : k.followUps) {
    OpBuilder fb = OpBuilder::atBlockEnd(&f.func.getBody().front());
    finishKernel(fb, loc, f);
    f.sizes = nullptr;
  }
  k.sizes = nullptr;
  return k;
}

gpu::GPUFuncOp KernelFormBuilder::createKernelFunc(OpBuilder &b, Location loc,
                                                   StringRef name,
                                                   TypeRange argTypes) {
  b.setInsertionPointToEnd(kernels.getBody());
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

SmallVector<Type>
KernelFormBuilder::getKernelParamTypes(ArrayRef<Value> params) {
  SmallVector<Type> types = llvm::map_to_vector(
      params, [](Value t) { return Type(getKernelBufferType(t.getType())); });
  if (hostSizes)
    types.push_back(hostSizes->getBufferType(kernels.getContext()));
  return types;
}

static void launchKernel(OpBuilder &b, Location loc, const Kernel &k,
                         SmallVector<Value> args);

LogicalResult
KernelFormBuilder::buildBodyKernel(OpBuilder &b, Operation *op, StringRef name,
                                   ArrayRef<Value> inputs, ValueRange results,
                                   ValueRange outputs, const IRMapping &buffers,
                                   BodyKernelFn emit) {
  Location loc = op->getLoc();
  SmallVector<Value> params(inputs);
  llvm::append_range(params, results);
  OpBuilder kb(op->getContext());
  Kernel k;
  k.func = createKernelFunc(kb, loc, name, getKernelParamTypes(params));
  std::unique_ptr<KernelSizes> sizes = addKernelSizes(k.func, params);
  k.sizes = sizes.get();
  IRMapping tensors;
  for (auto [t, arg] : llvm::zip(inputs, k.func.getArguments()))
    tensors.map(t, arg);
  // A copy: workgroup attributions the emitter adds append block
  // arguments, which may move the arguments' storage (a range over it
  // would dangle).
  SmallVector<Value> resultArgs(
      k.func.getArguments().slice(inputs.size(), results.size()));
  if (failed(emit(kb, tensors, resultArgs, k)))
    return failure();
  finishKernel(kb, loc, k);
  SmallVector<Value> args =
      llvm::map_to_vector(inputs, [&](Value t) { return buffers.lookup(t); });
  llvm::append_range(args, outputs);
  launchKernel(b, loc, k, getLaunchArgs(b, loc, args));
  return success();
}

std::unique_ptr<KernelSizes>
KernelFormBuilder::addKernelSizes(gpu::GPUFuncOp func, ArrayRef<Value> params,
                                  unsigned numScratch) {
  if (!hostSizes)
    return nullptr;
  Block &entry = func.getBody().front();
  auto sizes = std::make_unique<KernelSizes>(
      entry.getArgument(params.size() + numScratch), hostSizes->symbols.size(),
      &entry);
  // Eight 256-thread blocks per multiprocessor of the device model (2048
  // resident threads each on NVIDIA GPUs); 1024 blocks when it has no count.
  if (int64_t sms = getTarget(kernels).getSmCount(); sms > 0)
    sizes->setGridBlocks(8 * sms);
  for (auto [t, arg] : llvm::zip(params, entry.getArguments()))
    if (!cast<RankedTensorType>(t.getType()).hasStaticShape())
      sizes->setFlatShape(arg, getShapeSizes(t));
  return sizes;
}

LogicalResult
KernelFormBuilder::buildHostSizes(func::FuncOp func, func::FuncOp host,
                                  ArrayRef<SizeRequirement> requirements) {
  Location loc = func.getLoc();
  Block &entry = host.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  HostSizes &sizes = hostSizes.emplace();
  sizes.symbols = getSizeSymbols(func);
  for (SizeSymbol s : sizes.symbols) {
    Value arg = entry.getArgument(s.argNumber);
    sizes.values.push_back(
        s.dim < 0 ? arg
                  : memref::DimOp::create(b, loc, arg, s.dim).getResult());
  }
  auto buffer =
      memref::AllocOp::create(b, loc, sizes.getBufferType(b.getContext()));
  buffer->setAttr(kSizesBufferAttrName, b.getUnitAttr());
  sizes.buffer = buffer;
  for (auto [i, v] : llvm::enumerate(sizes.values))
    memref::StoreOp::create(
        b, loc, arith::IndexCastOp::create(b, loc, b.getI32Type(), v), buffer,
        ValueRange{arith::ConstantIndexOp::create(b, loc, i).getResult()});

  // What the bundle's manifest says of them (docs/Bundle.md).
  SmallVector<int64_t> symbols;
  for (SizeSymbol s : sizes.symbols)
    symbols.append({s.argNumber, s.dim});
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Attribute> shapes;
  for (Value v : llvm::concat<Value>(func.getArguments(), ret.getOperands())) {
    SmallVector<Attribute> shape;
    if (isa<RankedTensorType>(v.getType()))
      for (const Size &d : getShapeSizes(v))
        shape.push_back(encodeSize(b, d));
    shapes.push_back(b.getArrayAttr(shape));
  }
  SmallVector<Attribute> reqs;
  for (const SizeRequirement &r : requirements)
    reqs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("size", encodeSize(b, r.expr)),
         b.getNamedAttr("what", b.getStringAttr(r.what)),
         b.getNamedAttr("condition", b.getStringAttr(r.expr.strNonNegative(
                                         sizes.symbols)))}));
  host->setAttr(kSizesAttrName,
                b.getDictionaryAttr(
                    {b.getNamedAttr("symbols", b.getDenseI64ArrayAttr(symbols)),
                     b.getNamedAttr("shapes", b.getArrayAttr(shapes)),
                     b.getNamedAttr("requirements", b.getArrayAttr(reqs))}));
  return success();
}

Value KernelFormBuilder::allocateTemporary(OpBuilder &b, Location loc,
                                           Value r) {
  auto type = cast<RankedTensorType>(r.getType());
  if (type.hasStaticShape())
    return memref::AllocOp::create(b, loc, getMemRefType(type));
  SmallVector<Value> dynamic;
  SmallVector<Attribute> shape;
  for (auto [d, size] : llvm::enumerate(getShapeSizes(r))) {
    shape.push_back(encodeSize(b, size));
    if (type.isDynamicDim(d))
      dynamic.push_back(hostSizes->get(b, loc, size));
  }
  auto alloc = memref::AllocOp::create(b, loc, getMemRefType(type), dynamic);
  alloc->setAttr(kShapeAttrName, b.getArrayAttr(shape));
  return alloc;
}

SmallVector<Value> KernelFormBuilder::getLaunchArgs(OpBuilder &b, Location loc,
                                                    ArrayRef<Value> buffers) {
  if (!hostSizes)
    return SmallVector<Value>(buffers);
  SmallVector<Value> args;
  for (Value m : buffers) {
    auto type = cast<MemRefType>(m.getType());
    if (type.hasStaticShape() || type.getRank() == 1) {
      args.push_back(m);
      continue;
    }
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < type.getRank(); ++d)
      all[0].push_back(d);
    args.push_back(memref::CollapseShapeOp::create(b, loc, m, all));
  }
  args.push_back(hostSizes->buffer);
  return args;
}

void KernelFormBuilder::finishKernel(OpBuilder &b, Location loc, Kernel &k) {
  gpu::ReturnOp::create(b, loc);
  k.func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(k.block[0]), static_cast<int32_t>(k.block[1]),
       static_cast<int32_t>(k.block[2])}));
}

/// Launches `k` on `args` (its buffer parameters; its tensor maps are made
/// from them and appended).
static void launchKernel(OpBuilder &b, Location loc, const Kernel &k,
                         SmallVector<Value> args) {
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  for (const TensorMapParam &t : k.tensorMaps)
    args.push_back(createTensorMap(b, loc, args[t.buffer], t));
  gpu::LaunchFuncOp::create(
      b, loc, k.func,
      gpu::KernelDim3{cst(k.grid[0]), cst(k.grid[1]), cst(k.grid[2])},
      gpu::KernelDim3{cst(k.block[0]), cst(k.block[1]), cst(k.block[2])},
      k.sharedBytes
          ? arith::ConstantIntOp::create(b, loc, b.getI32Type(), k.sharedBytes)
                .getResult()
          : Value(),
      args);
}

ComprehensionOp KernelFormBuilder::findStatistics(ComprehensionOp c) {
  if (c.getBuiltinMonoid() != MonoidKind::OnlineSoftmax ||
      c.getNumParallel() < 2 || c.getNumReduced() != 1)
    return {};
  unsigned column = c.getNumParallel() - 1;
  Value score = c.getYield().getValues()[0];
  for (Operation *op = c->getNextNode(); op; op = op->getNextNode()) {
    auto n = dyn_cast<ComprehensionOp>(op);
    if (!n || n.getBuiltinMonoid() != MonoidKind::SoftmaxNorm ||
        n.getNumParallel() != column || n.getNumReduced() != 1 ||
        n.getReducedExtents() != c.getReducedExtents())
      continue;
    // Everything it reads exists where c runs.
    bool available = llvm::all_of(getTensorsRead(n), [&](Value t) {
      Operation *def = t.getDefiningOp();
      return !def || def->isBeforeInBlock(c);
    });
    if (!available)
      continue;
    IRMapping indices;
    bool extents = true;
    for (unsigned p = 0; p < column; ++p) {
      extents &= c.getExtent(p) == n.getExtent(p);
      indices.map(c.getIndex(p), n.getIndex(p));
    }
    indices.map(c.getIndex(c.getNumParallel()), n.getIndex(column));
    if (!extents)
      continue;
    // The statistics' score (through a widening) is c's.
    Value theirs = n.getYield().getValues()[0];
    if (auto ext = theirs.getDefiningOp<arith::ExtFOp>())
      theirs = ext.getIn();
    llvm::DenseMap<Value, Value> known;
    if (sameValue(score, theirs, indices, known))
      return n;
  }
  return {};
}

ComprehensionOp KernelFormBuilder::findScoreSibling(ComprehensionOp c) {
  auto nests = [](ComprehensionOp x) {
    return llvm::any_of(x.getBodyBlock(),
                        [](Operation &o) { return isa<ComprehensionOp>(o); });
  };
  if (c.getBuiltinMonoid() != MonoidKind::Add || c.getNumReduced() != 1 ||
      c.getNumResults() != 1 || !nests(c))
    return {};
  unsigned column = c.getNumParallel() - 1;
  for (Operation *op = c->getNextNode(); op; op = op->getNextNode()) {
    auto n = dyn_cast<ComprehensionOp>(op);
    if (!n || n.getBuiltinMonoid() != MonoidKind::Add ||
        n.getNumResults() != 1 || n.getNumParallel() != c.getNumParallel() ||
        n.getReducedExtents() != c.getReducedExtents() || !nests(n))
      continue;
    bool extents = true;
    for (unsigned p = 0; p < column; ++p)
      extents &= c.getExtent(p) == n.getExtent(p);
    if (!extents)
      continue;
    // It neither reads c's result nor anything made after c.
    bool available = llvm::all_of(getTensorsRead(n), [&](Value t) {
      Operation *def = t.getDefiningOp();
      return !def || def->isBeforeInBlock(c);
    });
    if (available && isScoreSibling(c, n))
      return n;
  }
  return {};
}
/// The integer input argument of `func` whose element `v` is, as read (a
/// widening signed cast at most between, as the runtimes read ids): a
/// token id read from the ids tensor. Not a padded read (its fill is no
/// element).
/// The source of `copy` when it is a flat reshape: a point comprehension
/// of static extents whose body reads one static-shaped comprehension
/// result of the same element type and number of elements, unpadded, at
/// the same row-major linear index (a view such as [4, 32, 128] read as
/// [4, 4096]); else null.
static Value getFlatReshapeSource(ComprehensionOp copy) {
  if (copy.getNumResults() != 1 || copy.getNumReduced() != 0)
    return Value();
  auto outType = dyn_cast<RankedTensorType>(copy.getResult(0).getType());
  Block &body = copy.getBody().front();
  if (!outType || !outType.hasStaticShape() || body.getOperations().size() != 2)
    return Value();
  auto read = dyn_cast<ReadOp>(body.front());
  auto yield = dyn_cast<YieldOp>(body.back());
  if (!read || !yield || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != read.getResult() || read.getFill())
    return Value();
  Value source = read.getTensor();
  auto inType = dyn_cast<RankedTensorType>(source.getType());
  if (!source.getDefiningOp<ComprehensionOp>() || !inType ||
      !inType.hasStaticShape() ||
      inType.getElementType() != outType.getElementType() ||
      inType.getNumElements() != outType.getNumElements() ||
      read.getIndices().size() != copy.getNumIndices())
    return Value();
  for (auto [i, index] : llvm::enumerate(read.getIndices()))
    if (index != copy.getIndex(i))
      return Value();
  // The linear index of the read, less the copy's own, is zero.
  MLIRContext *ctx = copy.getContext();
  AffineMap map = read.getMap();
  AffineExpr diff = getAffineConstantExpr(0, ctx);
  int64_t stride = 1;
  for (int64_t d = inType.getRank() - 1; d >= 0; --d) {
    diff = diff + map.getResult(d) * stride;
    stride *= inType.getDimSize(d);
  }
  stride = 1;
  for (int64_t d = outType.getRank() - 1; d >= 0; --d) {
    diff = diff - getAffineDimExpr(d, ctx) * stride;
    stride *= outType.getDimSize(d);
  }
  diff = simplifyAffineExpr(diff, map.getNumDims(), map.getNumSymbols());
  auto zero = dyn_cast<AffineConstantExpr>(diff);
  return zero && zero.getValue() == 0 ? source : Value();
}

static BlockArgument getIndexInput(func::FuncOp func, Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto cast = dyn_cast<arith::IndexCastOp>(def);
    if ((cast && cast.getType().isIndex()) || isa<arith::ExtSIOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto read = dyn_cast<ReadOp>(def);
    if (read && read.getFillAttr())
      return {};
    auto arg = read ? dyn_cast<BlockArgument>(read.getTensor()) : nullptr;
    if (!arg || arg.getOwner() != &func.getBody().front() ||
        !isa<IntegerType>(getElementTypeOrSelf(arg.getType())))
      return {};
    return arg;
  }
  return {};
}

/// The trap coordinates the runtime checks before anything runs: a data
/// coordinate of a `trap` gather (or scatter put) that is, as a whole, an
/// element of an integer input. Every element of that input must then lie
/// in the dimension it indexes (stricter than the interpreter, which checks
/// the elements read); the op becomes `clamp` (`drop`) in the kernels,
/// which stay memory safe. Ops with another trap coordinate are left
/// alone: the kernel emitters refuse them. Returns `tang.index_checks`.
static SmallVector<Attribute> collectIndexChecks(func::FuncOp func) {
  Builder b(func.getContext());
  SmallVector<Attribute> checks;
  // `op`'s coordinates `map` of `values` into `type`: when every data
  // coordinate is an input's element, their checks join `checks` and `op`
  // no longer traps in kernels; otherwise `op` is left as it is.
  auto check = [&](Operation *op, AffineMap map, ValueRange values,
                   ShapedType type, StringRef kind) {
    SmallVector<Attribute> found;
    for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
      bool usesData = false;
      expr.walk([&](AffineExpr e) { usesData |= isa<AffineSymbolExpr>(e); });
      if (!usesData)
        continue;
      auto sym = dyn_cast<AffineSymbolExpr>(expr);
      BlockArgument arg =
          sym ? getIndexInput(func, values[sym.getPosition()]) : nullptr;
      if (!arg || type.isDynamicDim(pos))
        return;
      std::string what;
      llvm::raw_string_ostream os(what);
      os << "coordinate #" << pos << " of the " << kind << " into " << type;
      // The first file position in the location (itself, or in a fused or
      // call-site one).
      op->getLoc()->walk([&](Location l) {
        auto at = dyn_cast<FileLineColLoc>(l);
        if (!at)
          return WalkResult::advance();
        os << " at " << at.getFilename().getValue() << ":" << at.getLine();
        return WalkResult::interrupt();
      });
      found.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("arg", b.getI64IntegerAttr(arg.getArgNumber())),
           b.getNamedAttr("bound", b.getI64IntegerAttr(type.getDimSize(pos))),
           b.getNamedAttr("what", b.getStringAttr(what))}));
    }
    // A gather fusion copied into several kernels checks its input once.
    for (Attribute f : found)
      if (!llvm::is_contained(checks, f))
        checks.push_back(f);
    if (auto gather = dyn_cast<GatherOp>(op))
      gather.setPolicy(OutOfRange::Clamp);
    else
      cast<PutOp>(op).setPolicy(OutOfRange::Drop);
  };
  func.walk([&](Operation *op) {
    if (auto gather = dyn_cast<GatherOp>(op);
        gather && gather.getPolicy() == OutOfRange::Trap)
      check(gather, gather.getMap(), gather.getValues(),
            gather.getTensor().getType(), "gather");
    if (auto put = dyn_cast<PutOp>(op);
        put && put.getPolicy() == OutOfRange::Trap)
      check(put, put.getMap(), put.getValues(),
            cast<ShapedType>(put->getParentOp()->getResult(0).getType()),
            "scatter");
  });
  return checks;
}

/// About 160 lines: the host function in the order it is built (signature,
/// returned arguments copied, hoisted constants, then one launch per
/// comprehension with its buffers and tensor maps).
LogicalResult KernelFormBuilder::convertFunc(func::FuncOp func) {
  Location loc = func.getLoc();
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "needs one block for the kernel form";
  bool symbolic = hasSymbolicSizes(func);
  SmallVector<Type> argTypes;
  for (auto [i, t] : llvm::enumerate(llvm::concat<const Type>(
           func.getArgumentTypes(), func.getResultTypes()))) {
    if (t.isIndex() && i < func.getNumArguments()) {
      argTypes.push_back(t); // A size.
      continue;
    }
    auto tt = dyn_cast<RankedTensorType>(t);
    if (!tt)
      return func.emitOpError()
             << "has an argument or result of type " << t
             << ": the kernel form takes tensors and index sizes";
    if (tt.getElementType().isInteger(1))
      return func.emitOpError() << "has an i1 tensor (" << t
                                << "): the kernel form stores no i1 tensors "
                                   "yet";
    argTypes.push_back(getMemRefType(t));
  }
  // Functions with symbolic sizes run scans and scatters of static extents
  // only (their verifiers ensure it) and point kernels for comprehensions.
  hostSizes.reset();
  SmallVector<SizeRequirement> requirements;
  if (symbolic)
    requirements = collectSizeRequirements(func);

  OpBuilder b(func);
  auto host = func::FuncOp::create(b, loc, func.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  host->setAttr(kKernelFormAttrName, b.getUnitAttr());
  // The arguments are the inputs, then one buffer per result.
  host->setAttr(kNumInputsAttrName,
                b.getI64IntegerAttr(func.getNumArguments()));
  Block *entry = host.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // Tensors to the memrefs that hold them.
  IRMapping buffers;
  for (auto [t, m] : llvm::zip(func.getArguments(), entry->getArguments()))
    buffers.map(t, m);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // A point comprehension copying `v`, before `at`.
  auto copyOf = [](Operation *at, Value v) -> Value {
    OpBuilder rb(at);
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (t.isDynamicDim(d))
        sizes.push_back(tensor::DimOp::create(rb, at->getLoc(), v, d));
    auto copy = ComprehensionOp::create(rb, at->getLoc(), TypeRange{t}, sizes,
                                        t.getShape(), ArrayRef<int64_t>{},
                                        Attribute(), ScheduleAttr());
    Block *body = rb.createBlock(&copy.getBody());
    SmallVector<Value> idx;
    for (int64_t d = 0; d < t.getRank(); ++d)
      idx.push_back(body->addArgument(rb.getIndexType(), at->getLoc()));
    // A view is read through: the copy reads its source.
    Value source = v;
    AffineMap map =
        AffineMap::getMultiDimIdentityMap(t.getRank(), rb.getContext());
    if (auto view = v.getDefiningOp<ViewOp>()) {
      source = view.getSource();
      map = view.getMap();
    }
    Value x = ReadOp::create(rb, at->getLoc(), source, map, idx);
    YieldOp::create(rb, at->getLoc(), ValueRange{x});
    return copy.getResult(0);
  };
  // An argument, a constant, a view or a value returned twice is copied
  // into its result (the kernel form writes each result once, in place).
  {
    llvm::DenseSet<Value> seen;
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      if (!isa<BlockArgument>(v) && !v.getDefiningOp<arith::ConstantOp>() &&
          !v.getDefiningOp<ViewOp>() && seen.insert(v).second)
        continue;
      operand.set(copyOf(ret, v));
    }
  }
  // A scatter writes in place into a copy of its base (its body still reads
  // the base itself, unchanged), or into the base itself when that is a
  // donated argument, or the result of a scatter in place, that nothing
  // uses after the scatter, nor the scatter's body (a KV cache updated in
  // place, layer after layer: earlier layers' attention reads the cache
  // before the next layer's scatter writes it; the kernels run in order).
  // `inPlace` maps each such scatter to the donated argument it updates.
  llvm::DenseMap<Operation *, BlockArgument> inPlace;
  Block &body = func.getBody().front();
  for (auto scatter : llvm::to_vector(func.getBody().getOps<ScatterOp>())) {
    Value base = scatter.getBase();
    BlockArgument root;
    if (auto arg = dyn_cast<BlockArgument>(base);
        arg && func.getArgAttr(arg.getArgNumber(), kDonateAttrName))
      root = arg;
    else if (auto prev = base.getDefiningOp<ScatterOp>())
      root = inPlace.lookup(prev);
    if (root) {
      bool usedLater = llvm::any_of(base.getUses(), [&](OpOperand &use) {
        if (use.getOwner() == scatter &&
            use.getOperandNumber() ==
                scatter.getBaseMutable().getOperandNumber())
          return false;
        Operation *top = body.findAncestorOpInBlock(*use.getOwner());
        return !top || top == scatter || !top->isBeforeInBlock(scatter);
      });
      if (!usedLater) {
        inPlace[scatter] = root;
        continue;
      }
      scatter.emitRemark()
          << "copies its base, donated argument #" << root.getArgNumber()
          << ", instead of updating it in place: the base is used after the "
             "scatter or by its body";
    }
    scatter.getBaseMutable().assign(copyOf(scatter, scatter.getBase()));
  }
  // A body that yields (or puts) a constant hoisted out of it (a fill: no
  // reads, a constant operand of a tuple) yields a copy made in the body,
  // so that every kernel shape finds its yielded values among the body's.
  func.walk([&](Operation *term) {
    if (!isa<YieldOp, PutOp>(term))
      return;
    for (OpOperand &operand : term->getOpOperands()) {
      Operation *def = operand.get().getDefiningOp();
      if (def && isa<arith::ConstantOp>(def) &&
          def->getBlock() != term->getBlock()) {
        OpBuilder yb(term);
        operand.set(yb.clone(*def)->getResult(0));
      }
    }
  });
  llvm::DenseMap<Value, Value> outputOf;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    outputOf[v] = entry->getArgument(func.getNumArguments() + i);
  if (symbolic && failed(buildHostSizes(func, host, requirements)))
    return failure();
  // The copy a returned scatter writes into is the result's buffer; a
  // scatter in place returns its donated argument's buffer (an alias).
  // A returned flat reshape of a comprehension's result that nothing else
  // reads launches no kernel: the comprehension writes the result's buffer
  // through a view of its own shape.
  llvm::DenseSet<Operation *> elided;
  for (Value v : ret.getOperands()) {
    auto copy = v.getDefiningOp<ComprehensionOp>();
    Value source = copy ? getFlatReshapeSource(copy) : Value();
    if (!source || !source.hasOneUse() || outputOf.count(source) ||
        elided.contains(source.getDefiningOp()))
      continue;
    Value view = outputOf.lookup(v);
    auto outType = cast<MemRefType>(view.getType());
    if (outType.getRank() != 1) {
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < outType.getRank(); ++d)
        all[0].push_back(d);
      view = memref::CollapseShapeOp::create(b, copy.getLoc(), view, all);
    }
    MemRefType inType = getMemRefType(source.getType());
    if (inType.getRank() != 1) {
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < inType.getRank(); ++d)
        all[0].push_back(d);
      view = memref::ExpandShapeOp::create(b, copy.getLoc(), inType.getShape(),
                                           view, all);
    }
    outputOf[source] = view;
    elided.insert(copy);
  }
  SmallVector<int64_t> aliases;
  for (auto scatter : func.getBody().getOps<ScatterOp>()) {
    if (BlockArgument root = inPlace.lookup(scatter)) {
      for (OpOperand &use : scatter.getResult().getUses())
        if (use.getOwner() == ret.getOperation())
          aliases.append({func.getNumArguments() + use.getOperandNumber(),
                          root.getArgNumber()});
      continue;
    }
    if (Value out = outputOf.lookup(scatter.getResult()))
      outputOf[scatter.getBase()] = out;
  }
  if (!aliases.empty())
    host->setAttr(kAliasesAttrName, b.getDenseI64ArrayAttr(aliases));
  SmallVector<Attribute> indexChecks = collectIndexChecks(func);
  if (!indexChecks.empty())
    host->setAttr(kIndexChecksAttrName, b.getArrayAttr(indexChecks));

  SmallVector<Value> temporaries;
  unsigned kernelNo = 0;
  // Softmax statistics a flash kernel wrote (their comprehensions emit no
  // kernel of their own).
  llvm::DenseSet<Operation *> written;
  // The buffers of a scan's results: the function's outputs where
  // returned, else temporaries.
  auto resultBuffers = [&](Operation *scan) {
    SmallVector<Value> outputs;
    for (Value r : scan->getResults()) {
      Value m = outputOf.lookup(r);
      if (!m) {
        m = memref::AllocOp::create(b, scan->getLoc(),
                                    getMemRefType(r.getType()));
        temporaries.push_back(m);
      }
      buffers.map(r, m);
      outputs.push_back(m);
    }
    return outputs;
  };
  for (Operation &op : func.getBody().front()) {
    if (written.contains(&op) || elided.contains(&op))
      continue;
    if (auto c = dyn_cast<ComprehensionOp>(op)) {
      // The kernel its schedule names, or the one chooseKernel gives.
      KernelChoice choice;
      ScheduleAttr s = c.getScheduleAttr();
      if (s && s.getKernel() != KernelKind::Auto) {
        FailureOr<KernelChoice> scheduled = getScheduledKernel(c);
        if (failed(scheduled))
          return failure();
        choice = std::move(*scheduled);
      } else {
        choice = chooseKernel(c, options, /*remarks=*/true);
      }
      ComprehensionOp sibling;
      bool tensorCores = options.tensorCores != TensorCoreKind::None ||
                         choice.kind == KernelKind::Flash ||
                         choice.kind == KernelKind::Score;
      if (tensorCores)
        sibling = findStatistics(c);
      if (tensorCores && !sibling)
        sibling = findScoreSibling(c);
      SmallVector<Value> results;
      auto bufferOf = [&](Value r) {
        Value m = buffers.lookupOrNull(r);
        if (!m)
          m = outputOf.lookup(r);
        if (!m) {
          m = allocateTemporary(b, c.getLoc(), r);
          temporaries.push_back(m);
        }
        buffers.map(r, m);
        results.push_back(m);
      };
      for (Value r : c.getResults())
        bufferOf(r);
      if (sibling)
        for (Value r : sibling.getResults())
          bufferOf(r);
      SmallVector<Value> inputs = getTensorsRead(c);
      if (sibling)
        for (Value t : getTensorsRead(sibling))
          if (!llvm::is_contained(inputs, t))
            inputs.push_back(t);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      FailureOr<Kernel> k = buildKernel(c, choice, name, inputs, sibling);
      if (failed(k))
        return failure();
      if (k->wroteSibling)
        written.insert(sibling);
      SmallVector<Value> args = llvm::map_to_vector(
          inputs, [&](Value t) { return buffers.lookup(t); });
      args.append(results);
      for (MemRefType t : k->scratch) {
        Value m = memref::AllocOp::create(b, c.getLoc(), t);
        temporaries.push_back(m);
        args.push_back(m);
      }
      SmallVector<Value> launchArgs = getLaunchArgs(b, c.getLoc(), args);
      launchKernel(b, c.getLoc(), *k, launchArgs);
      for (const Kernel &f : k->followUps)
        launchKernel(b, c.getLoc(), f, launchArgs);
      continue;
    }
    if (auto scan = dyn_cast<ScanOp>(op)) {
      SmallVector<Value> inputs = getTensorsRead(scan);
      SmallVector<Value> outputs = resultBuffers(scan);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      if (failed(buildBodyKernel(
              b, scan, name, inputs, scan.getResults(), outputs, buffers,
              [&](OpBuilder &kb, IRMapping &tensors, ValueRange out,
                  Kernel &k) {
                return emitScanKernel(kb, scan, tensors, out, k);
              })))
        return failure();
      continue;
    }
    if (auto scan = dyn_cast<TensorScanOp>(op)) {
      auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
          scan, scan.getMonoidAttr());
      if (!isAffineComposition(monoid))
        return scan.emitOpError()
               << "has a monoid no kernel runs: the kernel form runs tensor "
                  "scans under the composition of affine maps (S -> A S + "
                  "B, the combine (A2 A1, A2 B1 + B2))";
      if (!scan.getResult(0).use_empty())
        return scan.emitOpError()
               << "uses the products of its transitions, which no kernel "
                  "computes (a kernel carries the states only)";
      llvm::SetVector<Value> inputs;
      inputs.insert(scan.getElements().begin(), scan.getElements().end());
      inputs.insert(scan.getInit().begin(), scan.getInit().end());
      SmallVector<Value> outputs = resultBuffers(scan);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      if (failed(buildBodyKernel(b, scan, name, inputs.getArrayRef(),
                                 scan.getResults(), outputs, buffers,
                                 [&](OpBuilder &kb, IRMapping &tensors,
                                     ValueRange out, Kernel &k) {
                                   return emitAffineScanKernel(
                                       kb, scan, tensors, out, k,
                                       options.cooperative);
                                 })))
        return failure();
      continue;
    }
    if (auto solve = dyn_cast<TriangularSolveOp>(op)) {
      SmallVector<Value> inputs = {solve.getLower()};
      if (solve.getRhs() != solve.getLower())
        inputs.push_back(solve.getRhs());
      SmallVector<Value> outputs = resultBuffers(solve);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      if (failed(buildBodyKernel(
              b, solve, name, inputs, solve.getResult(), outputs, buffers,
              [&](OpBuilder &kb, IRMapping &tensors, ValueRange out,
                  Kernel &k) {
                return emitTriangularSolveKernel(kb, solve, tensors, out[0], k,
                                                 options.cooperative);
              })))
        return failure();
      continue;
    }
    if (auto scatter = dyn_cast<ScatterOp>(op)) {
      // In place, into the copy of its base made above.
      Value output = buffers.lookup(scatter.getBase());
      buffers.map(scatter.getResult(), output);
      SmallVector<Value> inputs = getTensorsRead(scatter);
      std::string name = (func.getSymName() + "_k" + Twine(kernelNo++)).str();
      if (failed(buildBodyKernel(
              b, scatter, name, inputs, scatter.getResult(), output, buffers,
              [&](OpBuilder &kb, IRMapping &tensors, ValueRange out,
                  Kernel &k) {
                return emitScatterKernel(kb, scatter, tensors, out[0], k);
              })))
        return failure();
      continue;
    }
    if (op.getNumResults() == 1 && op.getResult(0).getType().isIndex() &&
        succeeded(getSizeOf(op.getResult(0))))
      continue; // A size: the kernels compute it from the sizes buffer.
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (c.getType().isIntOrIndexOrFloat())
        continue; // Rematerialised in the kernels that use it.
      // A tensor constant (inlined weights): a buffer the bundle fills.
      auto data = dyn_cast<DenseElementsAttr>(c.getValue());
      auto type = dyn_cast<RankedTensorType>(c.getType());
      if (!data || !type || !type.hasStaticShape() ||
          !isTangElementType(type.getElementType()) ||
          type.getElementType().isInteger(1))
        return c.emitOpError() << "is a constant the kernel form cannot "
                                  "hold (it takes dense tensors of f64, "
                                  "f32, f16, bf16, i32 or i8)";
      auto alloc = memref::AllocOp::create(b, c.getLoc(), getMemRefType(type));
      alloc->setAttr(kDataAttrName, data);
      temporaries.push_back(alloc);
      buffers.map(c.getResult(), alloc);
      continue;
    }
    if (isa<func::ReturnOp>(op)) {
      for (Value t : temporaries)
        memref::DeallocOp::create(b, loc, t);
      if (hostSizes)
        memref::DeallocOp::create(b, loc, hostSizes->buffer);
      func::ReturnOp::create(b, loc);
      continue;
    }
    if (isa<ViewOp>(op)) {
      if (op.use_empty())
        continue; // Returned: read through by its copy.
      return op.emitOpError() << "is read directly: the kernel form needs "
                                 "views folded into reads (--canonicalize)";
    }
    return op.emitOpError() << "is not supported by the kernel form";
  }
  func.erase();
  return success();
}

struct ConvertTangToGPUPass
    : tang::impl::ConvertTangToGPUBase<ConvertTangToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Fold views into reads first: kernels read the source tensors.
    if (failed(applyPatternsGreedily(module, RewritePatternSet(&getContext()))))
      return signalPassFailure();

    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && (!f.getBody().getOps<ComprehensionOp>().empty() ||
                              !f.getBody().getOps<ScatterOp>().empty() ||
                              !f.getBody().getOps<ScanOp>().empty() ||
                              !f.getBody().getOps<TensorScanOp>().empty() ||
                              !f.getBody().getOps<TriangularSolveOp>().empty()))
        funcs.push_back(f);
    if (funcs.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "tang_kernels");
    // The kernels' instruction, `target`: the module's device model's.
    TensorCoreKind kind = resolveTensorCores(tensorCores, module);
    if (matrixUnits < 0 || matrixUnits > 64 || subgroupSize < 1 ||
        subgroupSize > 1024) {
      module.emitError() << "convert-tang-to-gpu: matrix-units must be 0 to "
                            "64 and subgroup-size 1 to 1024, got "
                         << matrixUnits.getValue() << " and "
                         << subgroupSize.getValue();
      return signalPassFailure();
    }
    // Sums over several adjacent indices as one (weight gradients), where
    // the schedule leaves the kernel to this pass.
    llvm::DenseMap<Operation *, std::string> collapseFailures;
    if (kind != TensorCoreKind::None)
      for (func::FuncOp f : funcs)
        for (auto op :
             llvm::to_vector(f.getBody().front().getOps<ComprehensionOp>())) {
          std::string why;
          ScheduleAttr s = op.getScheduleAttr();
          if ((!s || s.getKernel() == KernelKind::Auto) &&
              classifyComprehension(op) == ShapeClass::MatmulLike &&
              !collapseReductions(op, kind == TensorCoreKind::Wgmma, tf32,
                                  why) &&
              !why.empty())
            collapseFailures[op] = why;
        }

    KernelOptions options;
    options.tensorCores = kind;
    options.tma = tma;
    options.warpSpecialize = warpSpecialize;
    options.tf32 = tf32;
    options.matrixUnits = matrixUnits;
    options.matrixUnitsF16 = matrixUnitsF16;
    options.subgroupSize = subgroupSize;
    options.cooperative = cooperative;
    options.splitSoftmaxMma = splitSoftmaxMma;
    options.splitSoftmaxBlocksPerSm = splitSoftmaxBlocksPerSm;
    options.collapseFailures = &collapseFailures;
    // One pattern per kernel kind; each builds the comprehensions whose
    // choice is its kind. A subgroup matrix kernel chosen as an attempt
    // falls back to the row and point kernels.
    KernelPatternSet patterns;
    populateFlashKernelPatterns(patterns);
    populateScoreKernelPatterns(patterns);
    populateMmaKernelPatterns(patterns);
    populateSubgroupMmaKernelPatterns(patterns, options);
    populateSplitSoftmaxKernelPatterns(patterns);
    populateColumnKernelPatterns(patterns);
    populateTiledKernelPatterns(patterns);
    populateRowKernelPatterns(patterns);
    KernelFormBuilder builder(kernels, options, patterns);
    for (func::FuncOp f : funcs)
      if (failed(builder.convertFunc(f)))
        return signalPassFailure();
    // The tensor monoids' combines are tang graphs no kernel or host runs
    // (the affine scan kernel implements its monoid): gone with their scans.
    for (auto m : llvm::make_early_inc_range(module.getOps<MonoidOp>()))
      if (m.isTensorMonoid() && SymbolTable::symbolKnownUseEmpty(m, module))
        m.erase();
  }
};

} // namespace
