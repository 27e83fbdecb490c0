//===- Grad.cpp - reverse mode over comprehensions --------------*- C++ -*-===//
//
// --tang-grad: the vector-Jacobian product of a function of tang ops, built
// from tang ops (see the pass description in Passes.td).
//
// The gradient function first recomputes the forward program (views folded
// into reads, nested comprehensions hoisted to saved tensors), then walks
// the function-level comprehensions backwards. For every read of a tensor
// that needs a gradient it builds one comprehension over that tensor's
// index space, whose body recomputes the forward body at the solved
// indices and runs reverse mode over that scalar graph, seeded with the
// cotangent of the comprehension's result.
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"

#include "GradInternal.h"

#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGGRAD
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-grad"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

namespace {

bool isFloatTensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && isa<FloatType>(r.getElementType());
}

} // namespace

Value Differentiator::sum(ArrayRef<Part> parts, RankedTensorType type,
                          Location loc) {
  if (parts.size() == 1 && !parts.front().map)
    return parts.front().tensor;
  OpBuilder &b = builder;
  auto c =
      ComprehensionOp::create(b, loc, TypeRange{type}, type.getShape(),
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  // The builder stays before the return: new ops go after `c`.
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (int64_t i = 0; i < type.getRank(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  Type e = type.getElementType();
  Value total;
  if (parts.empty()) {
    total = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  } else {
    AffineMap id =
        AffineMap::getMultiDimIdentityMap(idx.size(), b.getContext());
    for (const Part &p : parts) {
      Value v = ReadOp::create(b, loc, p.tensor, p.map ? p.map : id, idx);
      if (Value keep = emitMasks(b, loc, p.masks, idx))
        v = arith::SelectOp::create(
            b, loc, keep, v,
            arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0)));
      total = total ? arith::AddFOp::create(b, loc, total, v).getResult() : v;
    }
  }
  YieldOp::create(b, loc, ValueRange{total});
  return c.getResult(0);
}

Value Differentiator::tieCount(ComprehensionOp c) {
  // count[p] = sum_r (body(p, r) == result[p] ? 1 : 0)
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  auto type = cast<RankedTensorType>(c.getResult(0).getType());
  auto count = ComprehensionOp::create(
      b, loc, TypeRange{type}, c.getParallelExtents(), c.getReducedExtents(),
      MonoidKindAttr::get(b.getContext(), MonoidKind::Add), ScheduleAttr());
  count->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&count.getBody());
  IRMapping map;
  for (BlockArgument a : c.getBodyBlock().getArguments())
    map.map(a, body->addArgument(b.getIndexType(), loc));
  for (Operation &op : c.getBodyBlock().without_terminator())
    b.clone(op, map);
  Value term = map.lookup(c.getYield().getValues()[0]);
  SmallVector<Value> parallel;
  for (unsigned p = 0; p < c.getNumParallel(); ++p)
    parallel.push_back(body->getArgument(p));
  Value result = ReadOp::create(
      b, loc, c.getResult(0),
      AffineMap::getMultiDimIdentityMap(parallel.size(), b.getContext()),
      parallel);
  Type e = type.getElementType();
  if (term.getType() != e)
    term = arith::TruncFOp::create(b, loc, e, term);
  Value eq =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, term, result);
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 1.0));
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  YieldOp::create(b, loc,
                  ValueRange{arith::SelectOp::create(b, loc, eq, one, zero)});
  return count.getResult(0);
}

ComprehensionOp Differentiator::normalizer(ComprehensionOp c,
                                           IRMapping &clones) {
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  // The scores' operations and the parallel indices they use: attention's
  // scores do not use the output's column index, so (m, l) are saved per
  // row, [B, H, L].
  Value score = c.getYield().getValues()[0];
  llvm::SetVector<Operation *> slice;
  llvm::SmallDenseSet<unsigned, 8> used;
  getBodySlice(c, score, slice, used);
  SmallVector<unsigned> parallel;
  SmallVector<int64_t> extents;
  for (unsigned p = 0; p < c.getNumParallel(); ++p)
    if (used.contains(p)) {
      parallel.push_back(p);
      extents.push_back(c.getExtent(p));
    }
  normalizerIndices[c] = parallel;
  Type elementType = getStatisticsType(c.getResult(0).getType());
  Type t = RankedTensorType::get(extents, elementType);
  auto norm = ComprehensionOp::create(
      b, loc, TypeRange{t, t}, extents, c.getReducedExtents(),
      MonoidKindAttr::get(b.getContext(), MonoidKind::SoftmaxNorm),
      ScheduleAttr());
  norm->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&norm.getBody());
  for (unsigned p : parallel)
    clones.map(c.getIndex(p), body->addArgument(b.getIndexType(), loc));
  for (unsigned r = c.getNumParallel(); r < c.getNumIndices(); ++r)
    clones.map(c.getIndex(r), body->addArgument(b.getIndexType(), loc));
  for (Operation &op : c.getBodyBlock().without_terminator())
    if (slice.contains(&op))
      b.clone(op, clones);
  YieldOp::create(
      b, loc, castFloat(b, loc, clones.lookupOrDefault(score), elementType));
  return norm;
}

Value Differentiator::rowDot(ComprehensionOp c, Value dOut) {
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  ArrayRef<unsigned> rows = normalizerIndices[c];
  SmallVector<int64_t> rowExtents, columnExtents;
  SmallVector<unsigned> columns;
  for (unsigned p = 0; p < c.getNumParallel(); ++p) {
    if (llvm::is_contained(rows, p)) {
      rowExtents.push_back(c.getExtent(p));
    } else {
      columns.push_back(p);
      columnExtents.push_back(c.getExtent(p));
    }
  }
  Type e = getStatisticsType(c.getResult(0).getType());
  auto d = ComprehensionOp::create(
      b, loc, TypeRange{RankedTensorType::get(rowExtents, e)}, rowExtents,
      columnExtents,
      columns.empty() ? Attribute()
                      : MonoidKindAttr::get(b.getContext(), MonoidKind::Add),
      ScheduleAttr());
  d->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&d.getBody());
  SmallVector<Value> indices(c.getNumParallel());
  for (unsigned p : rows)
    indices[p] = body->addArgument(b.getIndexType(), loc);
  for (unsigned p : columns)
    indices[p] = body->addArgument(b.getIndexType(), loc);
  AffineMap id =
      AffineMap::getMultiDimIdentityMap(indices.size(), b.getContext());
  Value g = castFloat(b, loc, ReadOp::create(b, loc, dOut, id, indices), e);
  Value o =
      castFloat(b, loc, ReadOp::create(b, loc, c.getResult(0), id, indices), e);
  YieldOp::create(b, loc, ValueRange{arith::MulFOp::create(b, loc, g, o)});
  return d.getResult(0);
}

LogicalResult Differentiator::differentiate(ComprehensionOp c,
                                            ArrayRef<Value> cotangents) {
  if (!readsGradientOf(c))
    return success();
  std::optional<MonoidKind> monoid = c.getBuiltinMonoid();
  SmallVector<Value> saved;
  if (c.getNumReduced() != 0) {
    if (isExtremum(monoid)) {
      // (argmax and argmin: the value; the index has no cotangent.)
      if (c.getNumResults() != 1 && !isArgExtremum(monoid))
        return c.emitOpError() << "has several results under max/min";
      saved.push_back(tieCount(c));
    } else if (monoid == MonoidKind::SoftmaxNorm) {
      saved = {c.getResult(0), c.getResult(1), tieCount(c)};
    } else if (monoid == MonoidKind::OnlineSoftmax) {
      return differentiateOnlineSoftmax(c, cotangents);
    } else if (monoid != MonoidKind::Add) {
      InFlightDiagnostic d = c.emitOpError()
                             << "reduces under a monoid --tang-grad has no "
                                "derivative rule for (";
      if (Attribute attr = c.getMonoidAttr())
        d << attr;
      return d << "); add, max, min, argmax, argmin, softmax_norm and "
                  "online_softmax have one";
    }
  }
  // Reads and gathers of c's body, then of the nested reductions in it.
  auto visit = [&](Operation *op, ComprehensionOp n) -> LogicalResult {
    Value t = isa<ReadOp>(op)     ? cast<ReadOp>(op).getTensor()
              : isa<GatherOp>(op) ? cast<GatherOp>(op).getTensor()
                                  : Value();
    if (!t || !needsGradient.contains(t))
      return success();
    return emitReadGradient(c, op, n, cotangents, saved);
  };
  for (Operation &op : llvm::make_early_inc_range(c.getBodyBlock())) {
    if (failed(visit(&op, {})))
      return failure();
    if (auto n = dyn_cast<ComprehensionOp>(op))
      for (Operation *inner : llvm::to_vector(
               llvm::make_pointer_range(n.getBodyBlock().without_terminator())))
        if (failed(visit(inner, n)))
          return failure();
  }
  return success();
}

bool Differentiator::readsGradientOf(Operation *c) {
  bool reads = false;
  c->walk([&](Operation *op) {
    if (auto r = dyn_cast<ReadOp>(op))
      reads |= needsGradient.contains(r.getTensor());
    else if (auto g = dyn_cast<GatherOp>(op))
      reads |= needsGradient.contains(g.getTensor());
  });
  return reads;
}

LogicalResult
Differentiator::differentiateOnlineSoftmax(ComprehensionOp c,
                                           ArrayRef<Value> cotangents) {
  if (!cotangents[0])
    return success();
  WalkResult gathers = c.getBodyBlock().walk([&](GatherOp g) {
    if (!needsGradient.contains(g.getTensor()))
      return WalkResult::advance();
    g.emitOpError() << "in an online_softmax reduction cannot be "
                       "differentiated yet";
    return WalkResult::interrupt();
  });
  if (gathers.wasInterrupted())
    return failure();
  // The output itself is saved for D (fused into D's sum it would be
  // recomputed there off the tensor cores).
  c->setAttr(kSavedAttrName, OpBuilder(c).getUnitAttr());
  IRMapping clones;
  ComprehensionOp norm = normalizer(c, clones);
  ScoreSeed seed{c, norm.getResult(0), norm.getResult(1),
                 rowDot(c, cotangents[0]), cotangents[0]};
  SmallVector<Value> saved{seed.m, seed.l};
  llvm::SetVector<Operation *> valueOps;
  llvm::SmallDenseSet<unsigned, 8> unused;
  getBodySlice(c, c.getYield().getValues()[1], valueOps, unused);
  // A read (of c's body or of a nested reduction `n` in it) feeds the
  // values, the scores, or both: each part its own gradient.
  auto visit = [&](ReadOp r, ComprehensionOp n) -> LogicalResult {
    if (!needsGradient.contains(r.getTensor()))
      return success();
    Operation *top = n ? n.getOperation() : r.getOperation();
    if (valueOps.contains(top) &&
        failed(emitReadGradient(c, r, n, cotangents, saved)))
      return failure();
    if (auto copy =
            dyn_cast_or_null<ReadOp>(clones.lookupOrNull(r.getOperation())))
      return emitReadGradient(
          norm, copy,
          n ? cast<ComprehensionOp>(clones.lookup(n.getOperation()))
            : ComprehensionOp(),
          {}, {}, &seed);
    return success();
  };
  for (Operation &op : llvm::make_early_inc_range(c.getBodyBlock())) {
    if (auto r = dyn_cast<ReadOp>(op)) {
      if (failed(visit(r, {})))
        return failure();
    } else if (auto n = dyn_cast<ComprehensionOp>(op)) {
      for (ReadOp r : llvm::to_vector(n.getBodyBlock().getOps<ReadOp>()))
        if (failed(visit(r, n)))
          return failure();
    }
  }
  return success();
}

FailureOr<SmallVector<Value>>
Differentiator::run(ArrayRef<std::pair<Value, Value>> seeds) {
  Block &entry = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  builder.setInsertionPoint(ret);
  for (unsigned i : wrt)
    needsGradient.insert(entry.getArgument(i));
  // The comprehensions, scatters and scans, in order.
  SmallVector<Operation *> program;
  for (Operation &op : entry.without_terminator()) {
    if (isa<arith::ConstantOp>(op))
      continue;
    if (auto s = dyn_cast<ScatterOp>(op)) {
      LogicalResult status = success();
      if (prepareScatter(s, status))
        needsGradient.insert(s.getResult());
      if (failed(status))
        return failure();
      program.push_back(s);
      continue;
    }
    if (auto ts = dyn_cast<TensorScanOp>(op)) {
      auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
          ts, ts.getMonoidAttr());
      if (!isAffineComposition(monoid))
        return ts.emitOpError()
               << "scans under a tensor monoid --tang-grad has no derivative "
                  "rule for: it differentiates the composition of affine "
                  "maps (S -> A S + B)";
      if (!ts.getResult(0).use_empty())
        return ts.emitOpError()
               << "uses the products of its transitions: --tang-grad "
                  "differentiates the states only";
      program.push_back(ts);
      if (llvm::any_of(ts->getOperands(),
                       [&](Value v) { return needsGradient.contains(v); }))
        needsGradient.insert(ts.getResult(1));
      continue;
    }
    if (auto solve = dyn_cast<TriangularSolveOp>(op)) {
      program.push_back(solve);
      if (llvm::any_of(solve->getOperands(),
                       [&](Value v) { return needsGradient.contains(v); }))
        needsGradient.insert(solve.getResult());
      continue;
    }
    if (!isa<ComprehensionOp, ScanOp>(op))
      return op.emitOpError() << "is not a comprehension, scatter or scan: "
                                 "--tang-grad differentiates functions of "
                                 "those and views";
    program.push_back(&op);
    if (readsGradientOf(&op))
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          needsGradient.insert(r);
  }
  for (auto [value, dy] : seeds)
    contributions[value].push_back(Part{dy, AffineMap(), {}});
  for (Operation *op : llvm::reverse(program)) {
    SmallVector<Value> cotangents;
    bool any = false;
    for (Value r : op->getResults()) {
      auto it = contributions.find(r);
      if (it == contributions.end() || !isFloatTensor(r.getType()) ||
          !needsGradient.contains(r)) {
        cotangents.push_back(Value());
        continue;
      }
      cotangents.push_back(
          sum(it->second, cast<RankedTensorType>(r.getType()), op->getLoc()));
      any = true;
    }
    if (!any)
      continue;
    LogicalResult status =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case(
                [&](ComprehensionOp c) { return differentiate(c, cotangents); })
            .Case([&](ScatterOp s) {
              return differentiateScatter(s, cotangents[0]);
            })
            .Case([&](ScanOp s) { return differentiateScan(s, cotangents); })
            .Case([&](TensorScanOp s) {
              return differentiateTensorScan(s, cotangents);
            })
            .Case([&](TriangularSolveOp s) {
              return differentiateTriangularSolve(s, cotangents[0]);
            });
    if (failed(status))
      return failure();
  }
  SmallVector<Value> gradients;
  for (unsigned i : wrt) {
    Value arg = entry.getArgument(i);
    gradients.push_back(sum(contributions.lookup(arg),
                            cast<RankedTensorType>(arg.getType()),
                            grad.getLoc()));
  }
  return gradients;
}

namespace {

/// Whether `c` copies a tensor element by element, through float casts
/// only (a cotangent widened to f32 for a product computed in f32): its
/// read, or null.
ReadOp getCopiedRead(ComprehensionOp c) {
  if (c.getNumReduced() != 0 || c.getNumResults() != 1)
    return {};
  Block &body = c.getBodyBlock();
  auto read = dyn_cast<ReadOp>(&body.front());
  if (!read || !read.getMap().isIdentity() ||
      !llvm::equal(read.getIndices(), body.getArguments()))
    return {};
  Value v = read.getResult();
  for (Operation &op : llvm::drop_begin(body.without_terminator())) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op) || op.getOperand(0) != v)
      return {};
    v = op.getResult(0);
  }
  return c.getYield().getValues()[0] == v ? read : ReadOp();
}

/// Reads of copies (getCopiedRead) read the copied tensor instead, casts
/// applied at the read: a GEMM of a 16-bit cotangent then reads 16-bit
/// operands, and the copy goes away.
void forwardCopies(func::FuncOp f) {
  for (auto c :
       llvm::to_vector(f.getBody().front().getOps<ComprehensionOp>())) {
    ReadOp copied = getCopiedRead(c);
    if (!copied)
      continue;
    for (OpOperand &use :
         llvm::make_early_inc_range(c.getResult(0).getUses())) {
      auto read = dyn_cast<ReadOp>(use.getOwner());
      // (A padded read would read the fill before the cast, not after.)
      if (!read || read.getFill())
        continue;
      OpBuilder b(read);
      IRMapping map;
      Value v = ReadOp::create(b, read.getLoc(), copied.getTensor(),
                               read.getMap(), read.getIndices());
      map.map(copied.getResult(), v);
      for (Operation &op :
           llvm::drop_begin(c.getBodyBlock().without_terminator()))
        v = b.clone(op, map)->getResult(0);
      read.replaceAllUsesWith(v);
      read.erase();
    }
  }
}

struct TangGradPass : tang::impl::TangGradBase<TangGradPass> {
  using Base::Base;

  /// About 150 lines: the gradient function in the order it is built
  /// (signature, forward recomputation, seeds, the reverse sweep over
  /// comprehensions, the results).
  LogicalResult differentiateFunction(func::FuncOp f) {
    ModuleOp module = getOperation();
    if (hasSymbolicSizes(f))
      return f.emitOpError() << "cannot be differentiated yet: it has "
                                "symbolic sizes (--tang-grad needs static "
                                "extents)";
    SmallVector<unsigned> args;
    if (wrt.empty()) {
      for (auto [i, t] : llvm::enumerate(f.getArgumentTypes()))
        if (isFloatTensor(t))
          args.push_back(i);
    } else {
      for (int64_t i : wrt) {
        if (i < 0 || i >= static_cast<int64_t>(f.getNumArguments()))
          return f.emitOpError()
                 << "has no argument #" << i << " to differentiate (wrt)";
        if (!isFloatTensor(f.getArgumentTypes()[i]))
          return f.emitOpError() << "argument #" << i
                                 << " is not a floating-point tensor: it has "
                                    "no gradient";
        args.push_back(i);
      }
    }
    // @f_grad(inputs, one cotangent per floating-point result) -> gradients.
    SmallVector<Type> inputs(f.getArgumentTypes());
    SmallVector<unsigned> seeded;
    for (auto [i, t] : llvm::enumerate(f.getResultTypes()))
      if (isFloatTensor(t)) {
        inputs.push_back(t);
        seeded.push_back(i);
      }
    SmallVector<Type> outputs;
    for (unsigned i : args)
      outputs.push_back(f.getArgumentTypes()[i]);
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(f);
    std::string name = (f.getName() + "_grad").str();
    if (module.lookupSymbol(name))
      return f.emitOpError() << "already has a gradient function @" << name;
    auto grad = func::FuncOp::create(b, f.getLoc(), name,
                                     b.getFunctionType(inputs, outputs));
    Block *entry = grad.addEntryBlock();
    // The forward as fusion leaves it: a copy of f fused in a scratch module
    // (f itself stays as written).
    func::FuncOp source = f;
    ModuleOp scratch;
    llvm::scope_exit eraseScratch([&] {
      if (scratch)
        scratch.erase();
    });
    if (fuseForward) {
      OpBuilder sb = OpBuilder::atBlockEnd(module.getBody());
      scratch = ModuleOp::create(sb, f.getLoc());
      sb.setInsertionPointToStart(scratch.getBody());
      // What f may refer to (user monoids), then f.
      for (Operation &op : module.getBody()->without_terminator())
        if (!isa<func::FuncOp>(op) && &op != scratch.getOperation())
          sb.clone(op);
      source = cast<func::FuncOp>(sb.clone(*f));
      OpPassManager pm(ModuleOp::getOperationName());
      pm.addPass(createTangFuse());
      pm.addPass(createTangOnlineSoftmax());
      if (failed(runPipeline(pm, scratch)))
        return f.emitOpError() << "--tang-grad: fusing the forward program "
                                  "failed (fuse-forward=false differentiates "
                                  "it as written)";
    }
    IRMapping map;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      map.map(source.getArgument(i), entry->getArgument(i));
    b.setInsertionPointToStart(entry);
    for (Operation &op : source.getBody().front())
      b.clone(op, map);

    // Views fold into the reads that use them.
    if (failed(applyPatternsGreedily(grad, RewritePatternSet(&getContext()))))
      return grad.emitOpError() << "could not fold views into reads";
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(grad.getBody().front().without_terminator())))
      if (isa<ViewOp>(op) && op.use_empty())
        op.erase();
    // What scatters write and scans fold, as comprehensions.
    splitBodies(grad);
    // Nested comprehensions, innermost first: saved tensors, or sums
    // recomputed in the gradient's bodies.
    if (!llvm::is_contained({"auto", "save", "recompute"}, policy.getValue()))
      return f.emitOpError() << "--tang-grad: policy must be auto, save or "
                                "recompute, got '"
                             << policy << "'";
    int64_t largest = 0;
    for (Type t :
         llvm::concat<const Type>(f.getArgumentTypes(), f.getResultTypes()))
      if (auto r = dyn_cast<RankedTensorType>(t))
        largest = std::max(largest, r.getNumElements());
    for (ComprehensionOp top :
         llvm::to_vector(grad.getBody().front().getOps<ComprehensionOp>())) {
      SmallVector<ComprehensionOp> nested;
      top.getBodyBlock().walk<WalkOrder::PostOrder>(
          [&](ComprehensionOp n) { nested.push_back(n); });
      for (ComprehensionOp n : nested) {
        // The scores of an online-softmax reduction are recomputed in
        // the flash backward as in the forward, whatever their size.
        bool always = policy == "recompute" ||
                      top.getBuiltinMonoid() == MonoidKind::OnlineSoftmax;
        if (policy != "save" && isRecomputable(n, top, largest, always)) {
          ++numRecomputedNested;
          continue;
        }
        if (failed(hoistNested(n, top)))
          return failure();
        ++numSavedNested;
      }
    }

    auto ret = cast<func::ReturnOp>(entry->getTerminator());
    SmallVector<std::pair<Value, Value>> seeds;
    for (auto [k, i] : llvm::enumerate(seeded))
      seeds.emplace_back(ret.getOperand(i),
                         entry->getArgument(f.getNumArguments() + k));
    unsigned count = 0;
    Differentiator d(grad, args, count);
    FailureOr<SmallVector<Value>> gradients = d.run(seeds);
    if (failed(gradients))
      return failure();
    numGradients += count;
    b.setInsertionPoint(ret);
    // With split, the forward's results stay returned until the split.
    SmallVector<Value> returned(*gradients);
    if (split)
      returned.append(ret.getOperands().begin(), ret.getOperands().end());
    auto gradRet = func::ReturnOp::create(b, ret.getLoc(), returned);
    ret.erase();
    // Drop what the gradients do not use (forward values, recomputed
    // operations off the differentiated paths).
    auto simplify = [&](func::FuncOp fn) -> LogicalResult {
      if (failed(applyPatternsGreedily(fn, RewritePatternSet(&getContext()))))
        return fn.emitOpError() << "could not simplify the gradient";
      return success();
    };
    if (failed(simplify(grad)))
      return failure();
    forwardCopies(grad);
    if (failed(simplify(grad)))
      return failure();
    if (split) {
      if (failed(splitGradient(f, grad, gradients->size())))
        return failure();
      gradRet->eraseOperands(gradients->size(),
                             gradRet.getNumOperands() - gradients->size());
      if (failed(simplify(grad)) ||
          failed(simplify(module.lookupSymbol<func::FuncOp>(
              (f.getName() + "_fwd").str()))) ||
          failed(simplify(
              module.lookupSymbol<func::FuncOp>((f.getName() + "_bwd").str()))))
        return failure();
    }
    return success();
  }

  /// From `grad` (inputs, cotangents -> the first `numGradients` returned
  /// values, then f's results), @f_fwd(inputs) -> (results, residuals) and
  /// @f_bwd(inputs, results, residuals, cotangents) -> gradients: the
  /// operations that do not depend on a cotangent go forward, the tensors
  /// other than the results they pass to the others are the residuals
  /// (scalar constants are recomputed).
  LogicalResult splitGradient(func::FuncOp f, func::FuncOp grad,
                              unsigned numGradients) {
    ModuleOp module = getOperation();
    Block &entry = grad.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    unsigned numInputs = f.getNumArguments();
    // Backward values: the cotangents and what depends on them.
    llvm::DenseSet<Value> backward(entry.args_begin() + numInputs,
                                   entry.args_end());
    SmallVector<Operation *> forwardOps, backwardOps;
    auto usesBackward = [&](Operation &op) {
      bool uses = false;
      op.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          uses |= backward.contains(v);
      });
      return uses;
    };
    for (Operation &op : entry.without_terminator()) {
      if (usesBackward(op)) {
        backwardOps.push_back(&op);
        backward.insert(op.result_begin(), op.result_end());
      } else {
        forwardOps.push_back(&op);
      }
    }
    // Residuals: forward tensors the backward operations or the gradients
    // use; scalar constants and views (of inputs) are cloned instead.
    llvm::SetVector<Value> residuals;
    SmallVector<Operation *> constants;
    ValueRange results = ret.getOperands().drop_front(numGradients);
    std::function<void(Value)> need = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != &entry || backward.contains(v) ||
          llvm::is_contained(results, v))
        return;
      if (isa<RankedTensorType>(v.getType()) && !isa<ViewOp>(def)) {
        residuals.insert(v);
        return;
      }
      if (llvm::is_contained(constants, def))
        return;
      for (Value operand : def->getOperands())
        need(operand);
      constants.push_back(def);
    };
    for (Operation *op : backwardOps)
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          need(v);
      });
    for (Value v : ret.getOperands().take_front(numGradients))
      need(v);
    for (Operation *c : constants)
      if (!isa<arith::ConstantOp, ViewOp>(c))
        return c->emitOpError() << "--tang-grad split: a scalar the backward "
                                   "function needs is not a constant";

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(grad);
    Location loc = grad.getLoc();
    for (StringRef suffix : {"_fwd", "_bwd"})
      if (module.lookupSymbol((f.getName() + suffix).str()))
        return f.emitOpError()
               << "already has a function @" << f.getName() << suffix;
    // @f_fwd(inputs) -> (results, residuals).
    SmallVector<Type> inputTypes(f.getArgumentTypes());
    SmallVector<Type> fwdResults(f.getResultTypes());
    for (Value r : residuals)
      fwdResults.push_back(r.getType());
    auto fwd = func::FuncOp::create(b, loc, (f.getName() + "_fwd").str(),
                                    b.getFunctionType(inputTypes, fwdResults));
    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = fwd.addEntryBlock();
      b.setInsertionPointToStart(body);
      IRMapping map;
      for (unsigned i = 0; i < numInputs; ++i)
        map.map(entry.getArgument(i), body->getArgument(i));
      for (Operation *op : forwardOps)
        b.clone(*op, map);
      SmallVector<Value> values;
      for (Value v : results)
        values.push_back(map.lookupOrDefault(v));
      for (Value r : residuals)
        values.push_back(map.lookup(r));
      func::ReturnOp::create(b, loc, values);
    }
    // @f_bwd(inputs, results, residuals, cotangents) -> gradients.
    SmallVector<Type> bwdInputs(inputTypes);
    llvm::append_range(bwdInputs, f.getResultTypes());
    for (Value r : residuals)
      bwdInputs.push_back(r.getType());
    for (BlockArgument a : entry.getArguments().drop_front(numInputs))
      bwdInputs.push_back(a.getType());
    b.setInsertionPointAfter(fwd);
    auto bwd = func::FuncOp::create(
        b, loc, (f.getName() + "_bwd").str(),
        b.getFunctionType(
            bwdInputs, ret.getOperands().take_front(numGradients).getTypes()));
    OpBuilder::InsertionGuard guard(b);
    Block *body = bwd.addEntryBlock();
    b.setInsertionPointToStart(body);
    IRMapping map;
    for (unsigned i = 0; i < numInputs; ++i)
      map.map(entry.getArgument(i), body->getArgument(i));
    unsigned next = numInputs;
    for (Value r : results) {
      // A result returned twice keeps its first argument.
      if (!map.contains(r))
        map.map(r, body->getArgument(next));
      ++next;
    }
    for (Value r : residuals)
      map.map(r, body->getArgument(next++));
    for (BlockArgument a : entry.getArguments().drop_front(numInputs))
      map.map(a, body->getArgument(next++));
    for (Operation *c : constants)
      b.clone(*c, map);
    for (Operation *op : backwardOps)
      b.clone(*op, map);
    SmallVector<Value> grads;
    for (Value v : ret.getOperands().take_front(numGradients))
      grads.push_back(map.lookupOrDefault(v));
    func::ReturnOp::create(b, loc, grads);
    numResiduals += residuals.size();
    return success();
  }

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || f.getName().ends_with("_grad"))
        continue;
      if (!function.empty() && f.getName() != function)
        continue;
      if (function.empty() &&
          ((f.getBody().getOps<ComprehensionOp>().empty() &&
            f.getBody().getOps<ScatterOp>().empty() &&
            f.getBody().getOps<ScanOp>().empty() &&
            f.getBody().getOps<TensorScanOp>().empty() &&
            f.getBody().getOps<TriangularSolveOp>().empty()) ||
           module.lookupSymbol((f.getName() + "_grad").str())))
        continue;
      funcs.push_back(f);
    }
    if (!function.empty() && funcs.empty()) {
      module.emitError() << "--tang-grad: no function @" << function;
      return signalPassFailure();
    }
    for (func::FuncOp f : funcs)
      if (failed(differentiateFunction(f)))
        return signalPassFailure();
  }
};

} // namespace
