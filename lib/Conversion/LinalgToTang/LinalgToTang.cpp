//===- LinalgToTang.cpp - linalg on tensors to tang -------------*- C++ -*-===//
//
// Imports linalg on tensors into tang comprehensions. One linalg.generic
// becomes one tang.comprehension (two for a reduction whose init is not the
// monoid's identity); named linalg ops are generalised first.
//
// The pass runs in three steps, so that nothing is rewritten unless the
// whole module can be imported:
//
//  1. check the function level (linalg on tensors, tensor.empty,
//     arith.constant, tang ops, func.return), decompose linalg.softmax and
//     generalise named linalg ops, remembering their names for diagnostics;
//  2. plan every generic (planImport: loops -> indices, combiner -> monoid,
//     init); whatever is not importable is an error at the op;
//  3. rewrite with the patterns of populateLinalgToTangPatterns, greedily but
//     without folding (which would hoist body constants out of the
//     comprehensions), then erase what became dead (fills, tensor.empty).
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/LinalgToTang/LinalgToTang.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tang {
#define GEN_PASS_DEF_CONVERTLINALGTOTANG
#include "Tang/Conversion/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "convert-linalg-to-tang"

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Planning: can a linalg.generic be imported, and how
//===----------------------------------------------------------------------===//

namespace {
/// How a linalg.generic maps onto a tang.comprehension.
struct ImportPlan {
  /// The comprehension index of each loop: parallel loops first, in the
  /// order of the output indexing map (so the comprehension's result has the
  /// output's shape), then reduction loops in loop order.
  SmallVector<unsigned> indexOfLoop;
  SmallVector<int64_t> parallelExtents, reducedExtents;
  /// Reductions only: the monoid, the combiner op in the payload and the
  /// accumulator's operand number in it.
  std::optional<MonoidKind> monoid;
  Operation *combiner = nullptr;
  unsigned accOperand = 0;
  /// Reductions only: the init is a fill of the monoid's identity, so the
  /// comprehension alone is the result.
  bool initIsIdentity = false;
};
} // namespace

/// The builtin monoid of a combiner `acc = op(acc, x)`, if there is one.
static std::optional<MonoidKind> getCombinerMonoid(Operation *op) {
  using Kind = std::optional<MonoidKind>;
  return llvm::TypeSwitch<Operation *, Kind>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return MonoidKind::Add; })
      // acc - x: a sum of -x (planImport checks the accumulator is first).
      .Case<arith::SubFOp, arith::SubIOp>([](auto) { return MonoidKind::Add; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return MonoidKind::Mul; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(
          [](auto) { return MonoidKind::Max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
          [](auto) { return MonoidKind::Min; })
      .Case<arith::AndIOp>([](auto) { return MonoidKind::And; })
      .Case<arith::OrIOp>([](auto) { return MonoidKind::Or; })
      .Default([](Operation *) { return std::nullopt; });
}

/// True if `value` is an identity of `combiner`, whose monoid is `kind`.
/// Signed integer extrema, as the builtin monoids use; for floats +-0 counts
/// as add's identity, and only -inf (+inf), not the lowest (highest) finite
/// value, as max's (min's). NaN is the identity of maxnumf and minnumf (which
/// linalg.softmax's decomposition starts its max from).
static bool isMonoidIdentity(MonoidKind kind, Operation *combiner,
                             Attribute value) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    APFloat v = f.getValue();
    if (v.isNaN())
      return isa<arith::MaxNumFOp, arith::MinNumFOp>(combiner);
    switch (kind) {
    case MonoidKind::Add:
      return v.isZero();
    case MonoidKind::Mul:
      return v.isExactlyValue(1.0);
    case MonoidKind::Max:
      return v.isInfinity() && v.isNegative();
    case MonoidKind::Min:
      return v.isInfinity() && !v.isNegative();
    default:
      return false;
    }
  }
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    APInt v = i.getValue();
    switch (kind) {
    case MonoidKind::Add:
    case MonoidKind::Or:
      return v.isZero();
    case MonoidKind::Mul:
      return v.isOne();
    case MonoidKind::Max:
      return v.isMinSignedValue();
    case MonoidKind::Min:
      return v.isMaxSignedValue();
    case MonoidKind::And:
      return v.isAllOnes();
    default:
      return false;
    }
  }
  return false;
}

/// The constant every element of `tensor` holds, if it is a fill of a
/// constant: linalg.fill, its generalisation, its import (a comprehension
/// yielding a constant) or a splat arith.constant.
static Attribute getSplatValue(Value tensor) {
  Operation *def = tensor.getDefiningOp();
  if (!def)
    return {};
  if (auto cst = dyn_cast<arith::ConstantOp>(def)) {
    if (auto splat = dyn_cast<SplatElementsAttr>(cst.getValue()))
      return splat.getSplatValue<Attribute>();
    return {};
  }
  Value scalar;
  if (auto fill = dyn_cast<linalg::FillOp>(def)) {
    scalar = fill.getInputs()[0];
  } else if (auto generic = dyn_cast<linalg::GenericOp>(def)) {
    if (std::optional<Value> v = linalg::isaFillOpInterface(generic))
      scalar = *v;
  } else if (auto comp = dyn_cast<ComprehensionOp>(def)) {
    YieldOp yield = comp.getYield();
    if (comp.getNumReduced() == 0 && comp->getNumResults() == 1 && yield)
      scalar = yield.getValues()[0];
  }
  Attribute value;
  if (scalar && matchPattern(scalar, m_Constant(&value)))
    return value;
  return {};
}

/// Plans the import of `op`; on failure writes why to `why`.
static LogicalResult planImport(linalg::GenericOp op, ImportPlan &plan,
                                llvm::raw_ostream &why) {
  if (!op.hasPureTensorSemantics()) {
    why << "linalg on memrefs is not supported (only linalg on tensors)";
    return failure();
  }
  if (op.hasDynamicShape()) {
    why << "dynamic shapes are not supported yet";
    return failure();
  }
  for (OpOperand &operand : op->getOpOperands()) {
    Type type = operand.get().getType();
    if (auto shaped = dyn_cast<ShapedType>(type)) {
      if (isTangElementType(shaped.getElementType()))
        continue;
      why << "operand #" << operand.getOperandNumber() << " has element type '"
          << shaped.getElementType()
          << "', not a tang element type (f64, f32, f16, bf16, i32, i8 or i1)";
      return failure();
    }
    if (!type.isIntOrFloat()) {
      why << "operand #" << operand.getOperandNumber() << " has type '" << type
          << "' (only tensors and integer or float scalars are supported)";
      return failure();
    }
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (auto [loop, range] : llvm::enumerate(ranges)) {
    if (ShapedType::isDynamic(range)) {
      why << "dynamic shapes are not supported yet";
      return failure();
    }
    if (range == 0) {
      why << "loop #" << loop
          << " has extent 0 (tang extents must be positive)";
      return failure();
    }
  }
  if (op.getNumDpsInits() == 0) {
    why << "it has no outputs";
    return failure();
  }

  // Loops -> indices. The output map must be a permutation of the parallel
  // loops: each element of the result is computed exactly once.
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned numLoops = iterators.size();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.getMatchingIndexingMap(&init) == outMap)
      continue;
    why << "outputs with different indexing maps are not supported";
    return failure();
  }
  unsigned numParallel = op.getNumParallelLoops();
  llvm::SmallBitVector seen(numLoops);
  bool isPermutation = outMap.getNumResults() == numParallel;
  for (AffineExpr e : outMap.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || iterators[dim.getPosition()] != utils::IteratorType::parallel ||
        seen.test(dim.getPosition())) {
      isPermutation = false;
      break;
    }
    seen.set(dim.getPosition());
  }
  if (!isPermutation) {
    why << "the output indexing map " << outMap
        << " is not a permutation of the parallel loops";
    return failure();
  }
  plan.indexOfLoop.assign(numLoops, 0);
  for (auto [pos, e] : llvm::enumerate(outMap.getResults())) {
    unsigned loop = cast<AffineDimExpr>(e).getPosition();
    plan.indexOfLoop[loop] = pos;
    plan.parallelExtents.push_back(ranges[loop]);
  }
  for (unsigned loop = 0; loop < numLoops; ++loop) {
    if (iterators[loop] != utils::IteratorType::reduction)
      continue;
    plan.indexOfLoop[loop] = numParallel + plan.reducedExtents.size();
    plan.reducedExtents.push_back(ranges[loop]);
  }

  // The payload must compute scalars; linalg.index must feed integer casts
  // (tang.index produces integers or floats, not 'index').
  Block *body = op.getBody();
  WalkResult walk = body->walk([&](Operation *inner) {
    auto isScalar = [](Type t) { return t.isIntOrIndexOrFloat(); };
    // tensor.extract of a tensor from above: a read or a gather.
    if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
      Region *r = extract.getTensor().getParentRegion();
      if (!r || op->isAncestor(r->getParentOp()) ||
          !extract.getType().isIntOrFloat() ||
          !isTangElementType(extract.getType())) {
        why << "a tensor.extract reads a tensor from inside the payload or "
               "of an element type tang does not hold";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    if (!llvm::all_of(inner->getOperandTypes(), isScalar) ||
        !llvm::all_of(inner->getResultTypes(), isScalar)) {
      why << "the payload op '" << inner->getName()
          << "' computes on non-scalar values (tang bodies compute scalars)";
      return WalkResult::interrupt();
    }
    if (!isa<linalg::IndexOp>(inner))
      return WalkResult::advance();
    for (Operation *user : inner->getUsers()) {
      if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(user) &&
          isa<IntegerType>(user->getResult(0).getType()))
        continue;
      if (isa<tensor::ExtractOp>(user))
        continue; // Its coordinate: an iteration index.
      why << "linalg.index is used by '" << user->getName()
          << "'; only arith.index_cast/index_castui to an integer type can "
             "become tang.index (which produces an integer or float, not "
             "'index')";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Inputs: read in bounds, never a tensor.empty.
  SmallVector<IndexRange> loopRanges = llvm::map_to_vector(
      ranges, [](int64_t n) { return IndexRange{0, n - 1}; });
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (!op.payloadUsesValueFromOperand(in))
      continue;
    if (in->get().getDefiningOp<tensor::EmptyOp>()) {
      why << "input #" << in->getOperandNumber()
          << " is a tensor.empty, whose contents are undefined";
      return failure();
    }
    auto type = dyn_cast<RankedTensorType>(in->get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(in);
    for (auto [dim, e] : llvm::enumerate(map.getResults())) {
      IndexRange r = getRange(e, loopRanges);
      if (r.lo >= 0 && r.hi < type.getDimSize(dim))
        continue;
      why << "input #" << in->getOperandNumber() << " is read out of bounds ("
          << map << ", dimension " << dim << ")";
      return failure();
    }
  }

  if (plan.reducedExtents.empty()) {
    for (OpOperand &init : op.getDpsInitsMutable()) {
      if (!op.payloadUsesValueFromOperand(&init) ||
          !init.get().getDefiningOp<tensor::EmptyOp>())
        continue;
      why << "the payload reads output #"
          << init.getOperandNumber() - op.getNumDpsInputs()
          << ", a tensor.empty whose contents are undefined";
      return failure();
    }
    return success();
  }

  // Reductions: one output whose accumulator is combined once, by a
  // recognised combiner whose result is yielded.
  if (op.getNumDpsInits() != 1) {
    why << "reductions with " << op.getNumDpsInits()
        << " outputs are not supported (one combiner per reduction)";
    return failure();
  }
  OpOperand *init = op.getDpsInitOperand(0);
  BlockArgument acc = op.getMatchingBlockArgument(init);
  Operation *combiner = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != body) {
    why << "the yielded value must be a combiner applied to the accumulator "
           "(the output block argument)";
    return failure();
  }
  std::optional<MonoidKind> kind = getCombinerMonoid(combiner);
  if (!kind) {
    why << "the combiner '" << combiner->getName()
        << "' is not recognised (expected arith.addf/addi, subf/subi (acc - "
           "x), mulf/muli, "
           "maximumf/maxnumf/maxsi, minimumf/minnumf/minsi, andi or ori "
           "applied to the accumulator)";
    return failure();
  }
  if (!acc.hasOneUse() || acc.getUses().begin()->getOwner() != combiner) {
    why << "the accumulator (the output block argument) must be used once, "
           "by the yielded '"
        << combiner->getName()
        << "' (several combiners, or other uses of it, are not supported)";
    return failure();
  }
  if (!combiner->getResult(0).hasOneUse()) {
    why << "the combined value is used by other payload ops besides "
           "linalg.yield";
    return failure();
  }
  plan.monoid = kind;
  plan.combiner = combiner;
  plan.accOperand = combiner->getOperand(0) == acc ? 0 : 1;
  if (isa<arith::SubFOp, arith::SubIOp>(combiner) && plan.accOperand != 0) {
    why << "the combiner '" << combiner->getName()
        << "' subtracts the accumulator (x - acc alternates signs: not a "
           "reduction under a monoid)";
    return failure();
  }
  Attribute initValue = getSplatValue(init->get());
  plan.initIsIdentity =
      initValue && isMonoidIdentity(*kind, combiner, initValue);
  if (!plan.initIsIdentity && init->get().getDefiningOp<tensor::EmptyOp>()) {
    why << "the reduction's init is a tensor.empty, whose contents are "
           "undefined (fill it with the monoid's identity)";
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Replaces the linalg.index ops in `comp`'s body, whose users are integer
/// casts (checked by planImport), by tang.index ops of the cast types.
static void replaceLinalgIndices(RewriterBase &rewriter, ComprehensionOp comp,
                                 ArrayRef<Value> loopIndices) {
  SmallVector<linalg::IndexOp> indexOps;
  comp.walk([&](linalg::IndexOp op) { indexOps.push_back(op); });
  for (linalg::IndexOp op : indexOps) {
    Value index = loopIndices[op.getDim()];
    for (Operation *cast : llvm::make_early_inc_range(op->getUsers())) {
      rewriter.setInsertionPoint(cast);
      rewriter.replaceOpWithNewOp<tang::IndexOp>(
          cast, cast->getResult(0).getType(), index);
    }
    rewriter.eraseOp(op);
  }
}

/// Clones the scalar constants `comp`'s body captures from above into the
/// body, so the comprehension is self-contained.
static void cloneCapturedConstants(RewriterBase &rewriter,
                                   ComprehensionOp comp) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(comp.getBody(), captured);
  rewriter.setInsertionPointToStart(&comp.getBodyBlock());
  for (Value v : captured) {
    Operation *def = v.getDefiningOp();
    if (!def || !v.getType().isIntOrIndexOrFloat() ||
        !def->hasTrait<OpTrait::ConstantLike>() || def->getNumResults() != 1)
      continue;
    Value copy = rewriter.clone(*def)->getResult(0);
    rewriter.replaceUsesWithIf(v, copy, [&](OpOperand &use) {
      return comp->isProperAncestor(use.getOwner());
    });
  }
}

/// Creates a comprehension with `extents` (parallel, then reduced) and an
/// empty body of index arguments; the insertion point moves into the body.
static ComprehensionOp createComprehension(RewriterBase &rewriter, Location loc,
                                           TypeRange results,
                                           ArrayRef<int64_t> parallel,
                                           ArrayRef<int64_t> reduced,
                                           Attribute monoid) {
  auto comp = ComprehensionOp::create(rewriter, loc, results, parallel, reduced,
                                      monoid, ScheduleAttr());
  unsigned n = parallel.size() + reduced.size();
  rewriter.createBlock(&comp.getBody(), {},
                       SmallVector<Type>(n, rewriter.getIndexType()),
                       SmallVector<Location>(n, loc));
  return comp;
}

namespace {
// Pattern: linalg.generic(tensors) -> tang.comprehension
//          [+ a map comprehension combining a non-identity init]
struct GenericOp_ToComprehension : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    ImportPlan plan;
    std::string why;
    llvm::raw_string_ostream os(why);
    if (failed(planImport(op, plan, os)))
      return rewriter.notifyMatchFailure(op, why);

    Location loc = op.getLoc();
    bool reduces = plan.monoid.has_value();
    Attribute monoid;
    if (reduces)
      monoid = MonoidKindAttr::get(getContext(), *plan.monoid);
    auto comp =
        createComprehension(rewriter, loc, op->getResultTypes(),
                            plan.parallelExtents, plan.reducedExtents, monoid);
    Block &body = comp.getBodyBlock();
    SmallVector<Value> loopIndices =
        llvm::map_to_vector(plan.indexOfLoop, [&](unsigned i) -> Value {
          return body.getArgument(i);
        });

    // Reads at an indexing map over the loops, keeping only the indices the
    // map uses.
    auto read = [&](Value tensor, AffineMap map) -> Value {
      llvm::SmallBitVector unused = getUnusedDimsBitVector({map});
      SmallVector<Value> indices;
      for (unsigned d = 0; d < map.getNumDims(); ++d)
        if (!unused.test(d))
          indices.push_back(loopIndices[d]);
      return ReadOp::create(rewriter, loc, tensor, compressDims(map, unused),
                            indices);
    };

    // Block arguments: inputs are read (scalars are used as they are);
    // outputs of a map are read from the init.
    IRMapping mapping;
    for (OpOperand *in : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(in);
      if (arg.use_empty())
        continue;
      Value v = in->get();
      mapping.map(arg, isa<ShapedType>(v.getType())
                           ? read(v, op.getMatchingIndexingMap(in))
                           : v);
    }
    if (!reduces) {
      for (OpOperand &init : op.getDpsInitsMutable()) {
        BlockArgument arg = op.getMatchingBlockArgument(&init);
        if (!arg.use_empty())
          mapping.map(arg, read(init.get(), op.getMatchingIndexingMap(&init)));
      }
    }

    // The payload, less the combiner of a reduction: the body yields what
    // the combiner folds into the accumulator.
    Block *payload = op.getBody();
    for (Operation &inner : payload->without_terminator()) {
      if (&inner == plan.combiner)
        continue;
      // tensor.extract: a read at loop indices, or a gather where an
      // index is data (an embedding lookup); out of range traps.
      if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
        SmallVector<Value> dims, data;
        SmallVector<AffineExpr> coords;
        for (Value i : extract.getIndices()) {
          APInt c;
          if (matchPattern(i, m_ConstantInt(&c))) {
            coords.push_back(
                getAffineConstantExpr(c.getSExtValue(), getContext()));
            continue;
          }
          if (auto index = i.getDefiningOp<linalg::IndexOp>()) {
            coords.push_back(getAffineDimExpr(dims.size(), getContext()));
            dims.push_back(loopIndices[index.getDim()]);
          } else {
            coords.push_back(getAffineSymbolExpr(data.size(), getContext()));
            data.push_back(mapping.lookupOrDefault(i));
          }
        }
        AffineMap map =
            AffineMap::get(dims.size(), data.size(), coords, getContext());
        Value v;
        if (data.empty()) {
          v = ReadOp::create(rewriter, loc, extract.getTensor(), map, dims);
        } else {
          SmallVector<Value> operands(dims);
          llvm::append_range(operands, data);
          v = GatherOp::create(rewriter, loc, extract.getType(),
                               extract.getTensor(), operands, map,
                               OutOfRange::Trap);
        }
        mapping.map(extract.getResult(), v);
        continue;
      }
      rewriter.clone(inner, mapping);
    }
    SmallVector<Value> yielded;
    bool subtracts =
        isa_and_nonnull<arith::SubFOp, arith::SubIOp>(plan.combiner);
    if (reduces) {
      Value x = mapping.lookupOrDefault(
          plan.combiner->getOperand(1 - plan.accOperand));
      // acc - x folds -x into a sum.
      if (subtracts && isa<FloatType>(x.getType()))
        x = arith::NegFOp::create(rewriter, loc, x);
      else if (subtracts)
        x = arith::SubIOp::create(
            rewriter, loc,
            arith::ConstantOp::create(rewriter, loc,
                                      rewriter.getZeroAttr(x.getType())),
            x);
      yielded.push_back(x);
    } else
      for (Value v : payload->getTerminator()->getOperands())
        yielded.push_back(mapping.lookupOrDefault(v));
    YieldOp::create(rewriter, loc, yielded);
    replaceLinalgIndices(rewriter, comp, loopIndices);
    cloneCapturedConstants(rewriter, comp);

    if (!reduces || plan.initIsIdentity) {
      rewriter.replaceOp(op, comp->getResults());
      return success();
    }

    // init (+) reduction, elementwise, with the combiner in its operand
    // order. Both have the output's shape and dims order.
    rewriter.setInsertionPointAfter(comp);
    Value init = op.getDpsInitOperand(0)->get();
    auto combine =
        createComprehension(rewriter, loc, init.getType(), plan.parallelExtents,
                            /*reduced=*/{}, /*monoid=*/{});
    ValueRange indices = combine.getBodyBlock().getArguments();
    AffineMap identity = rewriter.getMultiDimIdentityMap(indices.size());
    // A constant init (a fill that is not the identity) is used directly, so
    // the fill is not materialised.
    Value initValue;
    auto splat = dyn_cast_or_null<TypedAttr>(getSplatValue(init));
    if (splat && splat.getType() == getElementTypeOrSelf(init.getType()))
      initValue = arith::ConstantOp::create(rewriter, loc, splat);
    else
      initValue = ReadOp::create(rewriter, loc, init, identity, indices);
    IRMapping operands;
    operands.map(plan.combiner->getOperand(plan.accOperand), initValue);
    Value reduced =
        ReadOp::create(rewriter, loc, comp->getResult(0), identity, indices);
    operands.map(plan.combiner->getOperand(1 - plan.accOperand), reduced);
    // init - x1 - x2 ... is init + (the sum of the -x).
    Operation *combined =
        !subtracts ? rewriter.clone(*plan.combiner, operands)
        : isa<FloatType>(reduced.getType())
            ? arith::AddFOp::create(rewriter, loc, initValue, reduced)
                  .getOperation()
            : arith::AddIOp::create(rewriter, loc, initValue, reduced)
                  .getOperation();
    YieldOp::create(rewriter, loc, combined->getResults());
    rewriter.replaceOp(op, combine->getResults());
    return success();
  }
};
} // namespace

/// The view map of a reshape between `big` (the expanded shape) and `small`
/// (the collapsed one) grouped by `groups`: each collapsed coordinate is the
/// row-major linearisation of its group's expanded coordinates (expand:
/// from the expanded result to the collapsed source), or each expanded
/// coordinate the delinearisation of its group's collapsed one (collapse).
static AffineMap getReshapeMap(ArrayRef<int64_t> big,
                               ArrayRef<ReassociationIndices> groups,
                               bool expand, MLIRContext *ctx) {
  SmallVector<AffineExpr> results;
  if (expand) {
    // (expanded coordinates) -> (collapsed coordinates)
    for (const ReassociationIndices &g : groups) {
      AffineExpr e = getAffineConstantExpr(0, ctx);
      for (int64_t d : g)
        e = e * big[d] + getAffineDimExpr(d, ctx);
      results.push_back(e);
    }
    return AffineMap::get(big.size(), 0, results, ctx);
  }
  // (collapsed coordinates) -> (expanded coordinates)
  for (auto [c, g] : llvm::enumerate(groups)) {
    AffineExpr x = getAffineDimExpr(c, ctx);
    int64_t stride = 1;
    for (int64_t d : g)
      stride *= big[d];
    for (int64_t d : g) {
      stride /= big[d];
      results.push_back((x.floorDiv(stride)) % big[d]);
    }
  }
  return AffineMap::get(groups.size(), 0, results, ctx);
}

/// Pattern: tensor.expand_shape / tensor.collapse_shape (static shapes)
///            -> tang.view by the linearising map
template <typename ReshapeOp>
struct Reshape_ToView : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern<ReshapeOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto src = cast<RankedTensorType>(op.getSrc().getType());
    auto dst = cast<RankedTensorType>(op.getResult().getType());
    if (!src.hasStaticShape() || !dst.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    constexpr bool expand = std::is_same_v<ReshapeOp, tensor::ExpandShapeOp>;
    AffineMap map =
        getReshapeMap(expand ? dst.getShape() : src.getShape(),
                      op.getReassociationIndices(), expand, op.getContext());
    rewriter.replaceOpWithNewOp<ViewOp>(op, dst, op.getSrc(), map);
    return success();
  }
};

/// The source coordinates of a static slice (`offsets`, `strides`, the
/// source dimensions `dropped` are not in the slice's shape) as affine
/// expressions of the slice's coordinates.
static SmallVector<AffineExpr>
getSliceCoordinates(ArrayRef<int64_t> offsets, ArrayRef<int64_t> strides,
                    const llvm::SmallBitVector &dropped, MLIRContext *ctx) {
  SmallVector<AffineExpr> coords;
  unsigned k = 0;
  for (size_t d = 0; d < offsets.size(); ++d) {
    AffineExpr c = getAffineConstantExpr(offsets[d], ctx);
    if (!dropped.test(d))
      c = c + getAffineDimExpr(k++, ctx) * strides[d];
    coords.push_back(c);
  }
  return coords;
}

/// Whether a slice op's offsets, sizes and strides are all static.
template <typename SliceOp>
static bool isStaticSlice(SliceOp op) {
  return !ShapedType::isDynamicShape(op.getStaticOffsets()) &&
         !ShapedType::isDynamicShape(op.getStaticSizes()) &&
         !ShapedType::isDynamicShape(op.getStaticStrides());
}

/// Pattern: tensor.extract_slice (static) -> tang.view by the slice's map
struct ExtractSlice_ToView : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractSliceOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticSlice(op) || !op.getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic slice");
    SmallVector<AffineExpr> coords =
        getSliceCoordinates(op.getStaticOffsets(), op.getStaticStrides(),
                            op.getDroppedDims(), op.getContext());
    AffineMap map =
        AffineMap::get(op.getType().getRank(), 0, coords, op.getContext());
    rewriter.replaceOpWithNewOp<ViewOp>(op, op.getType(), op.getSource(), map);
    return success();
  }
};

/// Pattern: tensor.insert_slice (static) -> tang.scatter of the source into
///            the destination at the slice's coordinates
struct InsertSlice_ToScatter : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::InsertSliceOp op,
                                PatternRewriter &rewriter) const override {
    auto src = cast<RankedTensorType>(op.getSource().getType());
    if (!isStaticSlice(op) || !src.hasStaticShape() || src.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "dynamic or scalar slice");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    llvm::SmallBitVector dropped(op.getStaticSizes().size());
    // The destination's unit dimensions the source does not have.
    {
      unsigned k = 0;
      for (auto [d, n] : llvm::enumerate(op.getStaticSizes())) {
        if (k < src.getRank() && src.getDimSize(k) == n)
          ++k;
        else
          dropped.set(d);
      }
    }
    auto scatter =
        ScatterOp::create(rewriter, loc, op.getType(), op.getDest(),
                          src.getShape(), Attribute(), /*deterministic=*/false);
    Block *body = rewriter.createBlock(&scatter.getBody());
    SmallVector<Value> indices;
    for (int64_t d = 0; d < src.getRank(); ++d)
      indices.push_back(body->addArgument(rewriter.getIndexType(), loc));
    Value v = ReadOp::create(
        rewriter, loc, op.getSource(),
        AffineMap::getMultiDimIdentityMap(src.getRank(), ctx), indices);
    SmallVector<AffineExpr> coords = getSliceCoordinates(
        op.getStaticOffsets(), op.getStaticStrides(), dropped, ctx);
    PutOp::create(rewriter, loc, v, indices,
                  AffineMap::get(src.getRank(), 0, coords, ctx),
                  OutOfRange::Trap);
    rewriter.replaceOp(op, scatter.getResult());
    return success();
  }
};

/// The constant a tensor.pad pads with, if its region yields one.
static TypedAttr getPadValue(tensor::PadOp op) {
  Attribute value;
  if (!matchPattern(op.getConstantPaddingValue(), m_Constant(&value)))
    return {};
  return dyn_cast<TypedAttr>(value);
}

/// Pattern: tensor.pad (static, by a constant)
///            -> comprehension over the padded shape of a padded read
struct Pad_ToComprehension : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp op,
                                PatternRewriter &rewriter) const override {
    TypedAttr fill = getPadValue(op);
    RankedTensorType type = op.getResultType();
    if (!fill || !type.hasStaticShape() ||
        ShapedType::isDynamicShape(op.getStaticLow()))
      return rewriter.notifyMatchFailure(op, "not a static constant pad");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto c = ComprehensionOp::create(rewriter, loc, TypeRange{type},
                                     type.getShape(), ArrayRef<int64_t>{});
    Block *body = rewriter.createBlock(&c.getBody());
    SmallVector<Value> indices;
    SmallVector<AffineExpr> coords;
    for (auto [d, low] : llvm::enumerate(op.getStaticLow())) {
      indices.push_back(body->addArgument(rewriter.getIndexType(), loc));
      coords.push_back(getAffineDimExpr(d, ctx) - low);
    }
    Value v = ReadOp::create(rewriter, loc, op.getSource(),
                             AffineMap::get(type.getRank(), 0, coords, ctx),
                             indices, fill);
    YieldOp::create(rewriter, loc, ValueRange{v});
    rewriter.replaceOp(op, c.getResult(0));
    return success();
  }
};

void mlir::tang::populateLinalgToTangPatterns(RewritePatternSet &patterns) {
  linalg::populateLinalgNamedOpsGeneralizationPatterns(patterns);
  patterns.add<GenericOp_ToComprehension>(patterns.getContext());
  patterns.add<Reshape_ToView<tensor::ExpandShapeOp>,
               Reshape_ToView<tensor::CollapseShapeOp>, ExtractSlice_ToView,
               InsertSlice_ToScatter, Pad_ToComprehension>(
      patterns.getContext());
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

/// True for the function-level ops the import handles (or keeps).
static bool isHandledAtFunctionLevel(Operation *op) {
  return isa_and_nonnull<TangDialect>(op->getDialect()) ||
         isa<func::ReturnOp, arith::ConstantOp, tensor::EmptyOp,
             linalg::LinalgOp, linalg::SoftmaxOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ExtractSliceOp,
             tensor::InsertSliceOp, tensor::PadOp>(op);
}

/// Checks that `op`, at function level, is something the import handles.
static LogicalResult checkFunctionLevelOp(Operation *op) {
  if (!isHandledAtFunctionLevel(op))
    return op->emitError()
           << "'" << op->getName()
           << "' at function level is not supported by convert-linalg-to-tang "
              "(expected linalg ops on tensors, tensor.empty, "
              "tensor.expand_shape/collapse_shape, tensor.extract_slice/"
              "insert_slice, tensor.pad, arith.constant, tang ops or "
              "func.return)";
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    // Users that are not handled are reported themselves.
    for (Operation *user : empty->getUsers())
      if (isHandledAtFunctionLevel(user) &&
          !isa<linalg::LinalgOp, linalg::SoftmaxOp>(user))
        return empty.emitError()
               << "'tensor.empty' is used by '" << user->getName()
               << "': its contents are undefined, so it can only be an "
                  "operand that linalg ops do not read";
    return success();
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (linalgOp.hasPureTensorSemantics())
      return success();
    return op->emitError() << "cannot import '" << op->getName()
                           << "': linalg on memrefs is not supported (only "
                              "linalg on tensors)";
  }
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::PadOp>(op)) {
    for (Type t :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
      if (auto tt = dyn_cast<RankedTensorType>(t); tt && !tt.hasStaticShape())
        return op->emitError() << "cannot import '" << op->getName()
                               << "': dynamic shapes are not supported yet";
    auto slice = dyn_cast<OffsetSizeAndStrideOpInterface>(op);
    if (slice && (ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
                  ShapedType::isDynamicShape(slice.getStaticStrides())))
      return op->emitError() << "cannot import '" << op->getName()
                             << "': dynamic offsets or strides are not "
                                "supported yet";
    if (auto ins = dyn_cast<tensor::InsertSliceOp>(op);
        ins && ins.getSourceType().getRank() == 0)
      return op->emitError() << "cannot import 'tensor.insert_slice' of a "
                                "rank-0 tensor";
    if (auto pad = dyn_cast<tensor::PadOp>(op); pad && !getPadValue(pad))
      return op->emitError() << "cannot import 'tensor.pad': it pads with a "
                                "value that is not a constant";
    return success();
  }
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    // Decomposed into linalg.generic ops; dynamic shapes would bring
    // tensor.dim along.
    auto type = dyn_cast<RankedTensorType>(softmax.getOutput().getType());
    if (!type)
      return op->emitError() << "cannot import 'linalg.softmax': linalg on "
                                "memrefs is not supported (only linalg on "
                                "tensors)";
    if (!type.hasStaticShape())
      return op->emitError()
             << "cannot import 'linalg.softmax': dynamic shapes are not "
                "supported yet";
  }
  return success();
}

namespace {
struct ConvertLinalgToTangPass
    : tang::impl::ConvertLinalgToTangBase<ConvertLinalgToTangPass> {
  using ConvertLinalgToTangBase::ConvertLinalgToTangBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    // The functions to import: every one when strict (what is not tang
    // must import), else those holding linalg or tensor ops.
    SmallVector<func::FuncOp> funcs;
    getOperation().walk([&](func::FuncOp func) {
      bool foreign = strict;
      func.walk([&](Operation *op) {
        StringRef dialect = op->getName().getDialectNamespace();
        foreign |= dialect == "linalg" || dialect == "tensor";
      });
      if (foreign)
        funcs.push_back(func);
    });
    if (strict) {
      if (failed(importFunctions(funcs)))
        signalPassFailure();
      return;
    }
    // Each function on a copy: what fails stays as it was, with a remark.
    for (func::FuncOp func : funcs) {
      OpBuilder b(func);
      auto trial = cast<func::FuncOp>(b.clone(*func));
      trial.setSymName((func.getSymName() + "__tang_import").str());
      std::string why;
      LogicalResult imported = success();
      {
        ScopedDiagnosticHandler capture(&getContext(), [&](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error && why.empty())
            why = d.str();
          return success();
        });
        imported = importFunctions({trial});
      }
      if (failed(imported)) {
        trial.erase();
        func.emitRemark() << "convert-linalg-to-tang: @" << func.getSymName()
                          << " stays as it was: " << why;
        ++numSkipped;
        continue;
      }
      StringAttr name = func.getSymNameAttr();
      func.erase();
      trial.setSymNameAttr(name);
    }
  }

  /// Imports every linalg op of `funcs`, or emits errors and fails (with
  /// the functions partly rewritten).
  LogicalResult importFunctions(ArrayRef<func::FuncOp> funcs) {
    // 1. Check the function level; decompose linalg.softmax and generalise
    //    named ops.
    bool ok = true;
    SmallVector<linalg::SoftmaxOp> softmaxes;
    for (func::FuncOp func : funcs)
      for (Block &block : func.getBody())
        for (Operation &op : block) {
          if (failed(checkFunctionLevelOp(&op)))
            ok = false;
          else if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op))
            softmaxes.push_back(softmax);
        }
    if (!ok)
      return failure();

    IRRewriter rewriter(&getContext());
    for (linalg::SoftmaxOp op : softmaxes) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> results = op.decomposeOperation(rewriter);
      if (failed(results)) {
        op.emitError() << "cannot import 'linalg.softmax': it does not "
                          "decompose into linalg.generic ops";
        ok = false;
        continue;
      }
      rewriter.replaceOp(op, *results);
      ++numDecomposed;
    }
    SmallVector<linalg::LinalgOp> linalgOps;
    for (func::FuncOp func : funcs)
      for (Block &block : func.getBody())
        for (Operation &op : block)
          if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
            linalgOps.push_back(linalgOp);
    DenseMap<Operation *, OperationName> namedOrigin;
    SmallVector<linalg::GenericOp> generics;
    for (linalg::LinalgOp op : linalgOps) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        generics.push_back(generic);
        continue;
      }
      OperationName name = op->getName();
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generic)) {
        op->emitError() << "cannot import '" << name
                        << "': it does not generalise to linalg.generic";
        ok = false;
        continue;
      }
      ++numGeneralized;
      namedOrigin.try_emplace(*generic, name);
      generics.push_back(*generic);
    }
    auto nameOf = [&](Operation *op) {
      auto it = namedOrigin.find(op);
      return it == namedOrigin.end() ? op->getName() : it->second;
    };

    // 2. Plan every generic: errors before anything is imported.
    for (linalg::GenericOp op : generics) {
      ImportPlan plan;
      std::string why;
      llvm::raw_string_ostream os(why);
      if (failed(planImport(op, plan, os))) {
        op.emitError() << "cannot import '" << nameOf(op) << "': " << why;
        ok = false;
        continue;
      }
      ++numImported;
      if (plan.monoid && !plan.initIsIdentity)
        ++numInitCombines;
    }
    if (!ok)
      return failure();

    // 3. Import, then erase what became dead (fills, tensor.empty, constants
    //    now cloned into bodies). No folding: it would hoist body constants.
    RewritePatternSet patterns(&getContext());
    populateLinalgToTangPatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    for (func::FuncOp func : funcs) {
      (void)applyPatternsGreedily(func, frozen, config);
      for (Block &block : func.getBody())
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
          if (isOpTriviallyDead(&op))
            rewriter.eraseOp(&op);
      // Everything was planned, so nothing is left; say so if it is.
      func.walk([&](Operation *op) {
        if (!isa<linalg::LinalgOp, tensor::EmptyOp, tensor::ExpandShapeOp,
                 tensor::CollapseShapeOp, tensor::ExtractSliceOp,
                 tensor::InsertSliceOp, tensor::PadOp>(op))
          return;
        op->emitError() << "cannot import '" << nameOf(op)
                        << "': the import left it behind";
        ok = false;
      });
    }
    return success(ok);
  }
};
} // namespace
