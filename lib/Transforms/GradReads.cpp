//===- GradReads.cpp - the gradient of one read -----------------*- C++ -*-===//
//
// Differentiator::emitReadGradient: the comprehension over a read tensor's
// index space whose body recomputes the forward body at the solved indices
// and runs reverse mode over it (GradInternal.h).
//
//===----------------------------------------------------------------------===//

#include "GradInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

LogicalResult Differentiator::emitReadGradient(
    ComprehensionOp c, Operation *read, ComprehensionOp nested,
    ArrayRef<Value> cotangents, ArrayRef<Value> saved, const ScoreSeed *score) {
  OpBuilder &b = builder;
  MLIRContext *ctx = b.getContext();
  Location loc = read->getLoc();
  auto gather = dyn_cast<GatherOp>(read);
  Value tensor = gather ? gather.getTensor() : cast<ReadOp>(read).getTensor();
  auto type = cast<RankedTensorType>(tensor.getType());
  // The iteration space: the comprehension's indices, then those of the
  // recomputed nested reduction holding the read (if any).
  unsigned m = c.getNumIndices();
  SmallVector<int64_t> extents;
  for (unsigned j = 0; j < m; ++j)
    extents.push_back(c.getExtent(j));
  if (nested)
    for (unsigned j = 0; j < nested.getNumIndices(); ++j)
      extents.push_back(nested.getExtent(j));
  auto position = [&](Value v) {
    auto arg = cast<BlockArgument>(v);
    return arg.getOwner()->getParentOp() == c.getOperation()
               ? arg.getArgNumber()
               : m + arg.getArgNumber();
  };
  // The read's coordinates over those indices.
  SmallVector<AffineExpr> coords;
  std::optional<Inverse> inv;
  RankedTensorType gType = type;
  Solution s;
  if (gather) {
    // Data coordinates are not solved: the gradient at every point of the
    // domain, scattered below.
    for (unsigned j = 0; j < extents.size(); ++j)
      coords.push_back(getAffineDimExpr(j, ctx));
    gType = RankedTensorType::get(extents, type.getElementType());
    s = solve(coords, extents, extents, ctx);
  } else {
    auto r = cast<ReadOp>(read);
    SmallVector<AffineExpr> toIndex;
    for (Value v : r.getIndices())
      toIndex.push_back(getAffineDimExpr(position(v), ctx));
    for (AffineExpr e : r.getMap().getResults())
      coords.push_back(e.replaceDims(toIndex));
    s = solve(coords, extents, type.getShape(), ctx);
  }
  // Where a coordinate combines indices (`h * 64 + e`, a reshape's pair),
  // the solution sums over indices the read determines, under masks (one
  // term in 2 of a 2-head sum, L^2 terms for a reshape): the gradient is
  // then computed over the read's own indices (its G reads like the
  // forward) and gathered into the tensor through the inverse map.
  bool maskedSum = false;
  for (unsigned j = 0; !gather && j < extents.size(); ++j) {
    auto dim = dyn_cast<AffineDimExpr>(s.index[j]);
    maskedSum |= dim && dim.getPosition() >= type.getRank() &&
                 llvm::any_of(coords, [&](AffineExpr e) {
                   return e.isFunctionOfDim(j);
                 });
  }
  // So is a read of part of the tensor (`AU[b, l, f + F]`): its gradient
  // over the read's indices needs no mask, the gather masks once.
  bool partial = !gather && llvm::any_of(s.masks, [&](const Mask &m) {
    return std::get<2>(m) != 1 || std::get<1>(m) != 0;
  });
  if ((maskedSum || partial) && (inv = invert(coords, extents, ctx))) {
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> own;
    for (unsigned j : inv->used) {
      shape.push_back(extents[j]);
      own.push_back(getAffineDimExpr(j, ctx));
    }
    gType = RankedTensorType::get(shape, type.getElementType());
    s = solve(own, extents, shape, ctx);
  }
  unsigned gDims = gType.getRank() + s.freeExtents.size();

  auto g = ComprehensionOp::create(
      b, loc, TypeRange{gType}, gType.getShape(), s.freeExtents,
      s.freeExtents.empty() ? Attribute()
                            : MonoidKindAttr::get(ctx, MonoidKind::Add),
      ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&g.getBody());
  SmallVector<Value> gIndices;
  for (unsigned d = 0; d < gDims; ++d)
    gIndices.push_back(body->addArgument(b.getIndexType(), loc));

  // The forward body at the solved indices: reads and index ops compose
  // their maps with the substitution (recomputed nested reductions keep
  // their own indices).
  llvm::DenseMap<Value, AffineExpr> exprOf;
  for (unsigned j = 0; j < m; ++j)
    exprOf[c.getIndex(j)] = s.safeIndex[j];
  SmallVector<Value> operands(gIndices);
  IRMapping mapping;
  SmallVector<Operation *> cloned;
  for (Operation &op : c.getBodyBlock().without_terminator()) {
    Operation *copy = cloneSubstituted(b, &op, mapping, exprOf, operands);
    cloned.push_back(copy);
  }
  // The read itself, and where the differentiated path starts at the
  // comprehension's level: the read, or the nested reduction holding it.
  Value target, start;
  SmallVector<Operation *> inner;
  if (!nested) {
    target = start = mapping.lookup(read->getResult(0));
  } else {
    start = mapping.lookup(nested.getResult(0));
  }

  // The differentiated path: from the read to the yielded values.
  llvm::DenseSet<Operation *> forward;
  llvm::DenseSet<Value> reached{start};
  for (Operation *op : cloned)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return reached.contains(v); })) {
      forward.insert(op);
      reached.insert(op->result_begin(), op->result_end());
    }

  // Seeds: the cotangent of each result at the comprehension's parallel
  // indices (for max/min: only where the term is the result, shared among
  // ties).
  llvm::DenseMap<Value, Value> adjoint;
  SmallVector<AffineExpr> parallelExprs(
      s.safeIndex.begin(), s.safeIndex.begin() + c.getNumParallel());
  AffineMap atParallel = AffineMap::get(gDims, 0, parallelExprs, ctx);
  std::optional<MonoidKind> monoid = c.getBuiltinMonoid();
  // `tensor` at the comprehension's parallel indices, in `type`.
  auto readAt = [&](Value tensor, Type type) -> Value {
    return castFloat(
        b, loc, ReadOp::create(b, loc, tensor, atParallel, gIndices), type);
  };
  auto seedAdd = [&](Value v, Value a) {
    auto [it, inserted] = adjoint.try_emplace(v, a);
    if (!inserted)
      it->second = arith::AddFOp::create(b, loc, it->second, a);
  };
  if (score) {
    // c is the normalizer of score->online: its parallel indices are the
    // scores' (the rows), its reduced ones the keys.
    ComprehensionOp online = score->online;
    Value sc = mapping.lookup(c.getYield().getValues()[0]);
    Type t = getStatisticsType(sc.getType());
    Value p = probability(b, loc, castFloat(b, loc, sc, t), readAt(score->m, t),
                          readAt(score->l, t));
    // sum_e dO(i, e) v(j, e): the values' operations over the output's
    // columns e, nested.
    ArrayRef<unsigned> rows = normalizerIndices[online];
    SmallVector<int64_t> columnExtents;
    SmallVector<unsigned> columns;
    for (unsigned q = 0; q < online.getNumParallel(); ++q)
      if (!llvm::is_contained(rows, q)) {
        columns.push_back(q);
        columnExtents.push_back(online.getExtent(q));
      }
    auto dot = ComprehensionOp::create(
        b, loc, TypeRange{t}, ArrayRef<int64_t>{}, columnExtents,
        MonoidKindAttr::get(ctx, MonoidKind::Add), ScheduleAttr());
    {
      OpBuilder::InsertionGuard inner(b);
      Block *dotBody = b.createBlock(&dot.getBody());
      llvm::DenseMap<Value, AffineExpr> at;
      size_t before = operands.size();
      for (auto [k, q] : llvm::enumerate(rows))
        at[online.getIndex(q)] = s.safeIndex[k];
      for (unsigned r = 0; r < online.getNumReduced(); ++r)
        at[online.getIndex(online.getNumParallel() + r)] =
            s.safeIndex[c.getNumParallel() + r];
      for (unsigned q : columns) {
        at[online.getIndex(q)] = getAffineDimExpr(operands.size(), ctx);
        operands.push_back(dotBody->addArgument(b.getIndexType(), loc));
      }
      Value value = online.getYield().getValues()[1];
      llvm::SetVector<Operation *> valueOps;
      llvm::SmallDenseSet<unsigned, 8> unused;
      getBodySlice(online, value, valueOps, unused);
      IRMapping valueMap;
      for (Operation &op : online.getBodyBlock().without_terminator())
        if (valueOps.contains(&op))
          cloneSubstituted(b, &op, valueMap, at, operands);
      SmallVector<AffineExpr> outAt;
      for (unsigned q = 0; q < online.getNumParallel(); ++q)
        outAt.push_back(at[online.getIndex(q)]);
      Value dOut = ReadOp::create(
          b, loc, score->dOut, AffineMap::get(operands.size(), 0, outAt, ctx),
          operands);
      YieldOp::create(
          b, loc,
          ValueRange{arith::MulFOp::create(
              b, loc, castFloat(b, loc, dOut, t),
              castFloat(b, loc, valueMap.lookupOrDefault(value), t))});
      operands.resize(before);
    }
    Value ds = arith::MulFOp::create(
        b, loc, p,
        arith::SubFOp::create(b, loc, dot.getResult(0), readAt(score->d, t)));
    seedAdd(sc, castFloat(b, loc, ds, sc.getType()));
  } else if (monoid == MonoidKind::SoftmaxNorm) {
    Value score = mapping.lookup(c.getYield().getValues()[0]);
    Type t = score.getType();
    auto cst = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
    };
    // m = max s (ties share), l = sum exp(s - m):
    // ds = dm share + dl (exp(s - m) - l share).
    Value m = readAt(saved[0], t), l = readAt(saved[1], t);
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, score, m));
    Value eq =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, score, m);
    Value share = arith::SelectOp::create(
        b, loc, eq,
        arith::DivFOp::create(b, loc, cst(1.0), readAt(saved[2], t)), cst(0.0));
    Value seed = cst(0.0);
    if (cotangents[0])
      seed = arith::MulFOp::create(b, loc, readAt(cotangents[0], t), share);
    if (cotangents[1]) {
      Value dl = readAt(cotangents[1], t);
      Value d = arith::SubFOp::create(b, loc, e,
                                      arith::MulFOp::create(b, loc, l, share));
      seed = arith::AddFOp::create(b, loc, seed,
                                   arith::MulFOp::create(b, loc, dl, d));
    }
    seedAdd(score, seed);
  } else if (monoid == MonoidKind::OnlineSoftmax && cotangents[0]) {
    // o = sum_j p_j v_j, p_j = exp(s_j - m) / l: dv_j = do p_j (the
    // scores' part goes through the normalizer, ScoreSeed). (m, l) are
    // saved over the parallel indices the scores use.
    Value score = mapping.lookup(c.getYield().getValues()[0]);
    Value value = mapping.lookup(c.getYield().getValues()[1]);
    Type t = getStatisticsType(score.getType());
    auto readSaved = [&](Value tensor) -> Value {
      SmallVector<AffineExpr> exprs;
      for (unsigned p : normalizerIndices.lookup(c))
        exprs.push_back(s.safeIndex[p]);
      return castFloat(b, loc,
                       ReadOp::create(b, loc, tensor,
                                      AffineMap::get(gDims, 0, exprs, ctx),
                                      gIndices),
                       t);
    };
    Value p = probability(b, loc, castFloat(b, loc, score, t),
                          readSaved(saved[0]), readSaved(saved[1]));
    Value dp = arith::MulFOp::create(b, loc, readAt(cotangents[0], t), p);
    seedAdd(value, castFloat(b, loc, dp, value.getType()));
  }
  for (auto [k, dy] : llvm::enumerate(cotangents)) {
    if (!dy || monoid == MonoidKind::SoftmaxNorm ||
        monoid == MonoidKind::OnlineSoftmax)
      continue;
    Value yielded = mapping.lookup(c.getYield().getValues()[k]);
    Value seed = ReadOp::create(b, loc, dy, atParallel, gIndices);
    if (isExtremum(monoid)) {
      Value result =
          ReadOp::create(b, loc, c.getResult(k), atParallel, gIndices);
      Value ties = ReadOp::create(b, loc, saved[0], atParallel, gIndices);
      Value term = yielded;
      if (term.getType() != result.getType())
        term = arith::TruncFOp::create(b, loc, result.getType(), term);
      Value eq = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, term,
                                       result);
      Value share = arith::DivFOp::create(b, loc, seed, ties);
      Value zero = arith::ConstantOp::create(
          b, loc, b.getFloatAttr(seed.getType(), 0.0));
      seed = arith::SelectOp::create(b, loc, eq, share, zero);
    }
    if (seed.getType() != yielded.getType())
      seed = arith::ExtFOp::create(b, loc, yielded.getType(), seed);
    seedAdd(yielded, seed);
  }
  // Only ops that lead from the read to a seeded value need rules.
  llvm::DenseSet<Value> live;
  for (auto &[v, a] : adjoint)
    live.insert(v);
  llvm::DenseSet<Operation *> onPath;
  for (Operation *op : llvm::reverse(cloned))
    if (forward.contains(op) && llvm::any_of(op->getResults(), [&](Value v) {
          return live.contains(v);
        })) {
      onPath.insert(op);
      live.insert(op->operand_begin(), op->operand_end());
    }
  if (failed(backpropagate(b, cloned, adjoint, onPath)))
    return failure();

  Value value;
  if (!nested) {
    value = adjoint.lookup(target);
  } else if (Value through = adjoint.lookup(start)) {
    // Inside the recomputed sum: its term at the solved indices, whose
    // cotangent is the sum's.
    for (unsigned j = 0; j < nested.getNumIndices(); ++j)
      exprOf[nested.getIndex(j)] = s.safeIndex[m + j];
    IRMapping innerMap;
    for (Operation &op : nested.getBodyBlock().without_terminator())
      inner.push_back(cloneSubstituted(b, &op, innerMap, exprOf, operands));
    target = innerMap.lookup(read->getResult(0));
    Value term = innerMap.lookup(nested.getYield().getValues()[0]);
    llvm::DenseMap<Value, Value> innerAdjoint;
    if (through.getType() != term.getType())
      through = arith::ExtFOp::create(b, loc, term.getType(), through);
    innerAdjoint[term] = through;
    llvm::DenseSet<Value> reachedInner{target};
    llvm::DenseSet<Operation *> innerPath;
    for (Operation *op : inner)
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return reachedInner.contains(v); })) {
        innerPath.insert(op);
        reachedInner.insert(op->result_begin(), op->result_end());
      }
    if (failed(backpropagate(b, inner, innerAdjoint, innerPath)))
      return failure();
    value = innerAdjoint.lookup(target);
  }

  Type e = type.getElementType();
  if (!value)
    value = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  if (value.getType() != e)
    value = arith::TruncFOp::create(b, loc, e, value);
  // Masks: solved indices within their extents, unsolved coordinates equal
  // to the read's.
  if (Value keep = emitMasks(b, loc, s.masks, gIndices))
    value = arith::SelectOp::create(
        b, loc, keep, value,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0)));
  YieldOp::create(b, loc, ValueRange{value});
  if (gather) {
    FailureOr<Value> scattered =
        scatterGatherGradient(c, gather, nested, g.getResult(0));
    if (failed(scattered))
      return failure();
    contributions[tensor].push_back(Part{*scattered, AffineMap(), {}});
    ++numGradients;
    return success();
  }
  Part part{g.getResult(0), AffineMap(), {}};
  if (inv) {
    // The gather: each coordinate x reads G at the indices that read it,
    // where they are in range and read exactly x.
    SmallVector<AffineExpr> of(inv->of), at;
    for (AffineExpr &e : of)
      if (!e)
        e = getAffineConstantExpr(0, ctx);
    for (unsigned j : inv->used) {
      AffineExpr e = simplifyAffineExpr(of[j], type.getRank(), 0);
      auto range = getBounds(e, type.getShape());
      if (range && range->first >= 0 && range->second < extents[j]) {
        at.push_back(e);
        continue;
      }
      part.masks.emplace_back(e, 0, extents[j]);
      at.push_back(e % extents[j]);
    }
    for (auto [d, coord] : llvm::enumerate(coords)) {
      AffineExpr diff = simplifyAffineExpr(
          coord.replaceDims(of) - getAffineDimExpr(d, ctx), type.getRank(), 0);
      auto range = getBounds(diff, type.getShape());
      if (!range || range->first != 0 || range->second != 0)
        part.masks.emplace_back(diff, 0, 1);
    }
    part.map = AffineMap::get(type.getRank(), 0, at, ctx);
  }
  contributions[tensor].push_back(part);
  ++numGradients;
  return success();
}

FailureOr<Value> Differentiator::scatterGatherGradient(ComprehensionOp c,
                                                       GatherOp gather,
                                                       ComprehensionOp nested,
                                                       Value g) {
  OpBuilder &b = builder;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(g.getDefiningOp());
  MLIRContext *ctx = b.getContext();
  Location loc = gather.getLoc();
  auto type = cast<RankedTensorType>(gather.getTensor().getType());
  Type e = type.getElementType();
  ArrayRef<int64_t> extents = cast<RankedTensorType>(g.getType()).getShape();
  // Zeros shaped like the gathered tensor.
  auto zeros =
      ComprehensionOp::create(b, loc, TypeRange{type}, type.getShape(),
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  {
    OpBuilder::InsertionGuard inner(b);
    Block *body = b.createBlock(&zeros.getBody());
    for (int64_t d = 0; d < type.getRank(); ++d)
      body->addArgument(b.getIndexType(), loc);
    YieldOp::create(
        b, loc,
        ValueRange{arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0))});
  }
  auto scatter = ScatterOp::create(b, loc, type, zeros.getResult(0), extents,
                                   MonoidKindAttr::get(ctx, MonoidKind::Add),
                                   /*deterministic=*/false);
  Block *body = b.createBlock(&scatter.getBody());
  SmallVector<Value> operands;
  for (size_t j = 0; j < extents.size(); ++j)
    operands.push_back(body->addArgument(b.getIndexType(), loc));
  // The point's gradient.
  Value value = ReadOp::create(
      b, loc, g, AffineMap::getMultiDimIdentityMap(extents.size(), ctx),
      operands);
  // The gather's data, recomputed: the ops of c's (then nested's) body it
  // depends on, in order.
  llvm::DenseMap<Value, AffineExpr> exprOf;
  unsigned m = c.getNumIndices();
  for (unsigned j = 0; j < m; ++j)
    exprOf[c.getIndex(j)] = getAffineDimExpr(j, ctx);
  if (nested)
    for (unsigned j = 0; j < nested.getNumIndices(); ++j)
      exprOf[nested.getIndex(j)] = getAffineDimExpr(m + j, ctx);
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(gather.getValues());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !c->isProperAncestor(def) || !slice.insert(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  IRMapping mapping;
  for (Operation &op : c.getBodyBlock())
    if (slice.contains(&op))
      cloneSubstituted(b, &op, mapping, exprOf, operands);
  if (nested)
    for (Operation &op : nested.getBodyBlock())
      if (slice.contains(&op))
        cloneSubstituted(b, &op, mapping, exprOf, operands);
  // The coordinates: dimensions composed, data mapped; what the policy did
  // to an out-of-range coordinate, the gradient does too.
  AffineMap map = gather.getMap();
  SmallVector<AffineExpr> dims;
  for (Value v : gather.getIndices())
    dims.push_back(exprOf.lookup(v));
  SmallVector<AffineExpr> symbols;
  SmallVector<Value> data;
  for (auto [k, v] : llvm::enumerate(gather.getValues())) {
    symbols.push_back(getAffineSymbolExpr(k, ctx));
    data.push_back(mapping.lookupOrDefault(v));
  }
  OutOfRange policy = gather.getPolicy();
  if (policy == OutOfRange::Clamp) {
    // To the clamped element: each data coordinate must be one value.
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      bool usesData = false;
      expr.walk([&](AffineExpr x) { usesData |= isa<AffineSymbolExpr>(x); });
      auto sym = dyn_cast<AffineSymbolExpr>(expr);
      if (usesData && !sym)
        return gather.emitOpError()
               << "clamps coordinate #" << r << " ("
               << detail::formatAffineExpr(expr)
               << "), which is not one data value: --tang-grad cannot yet "
                  "scatter its gradient to the clamped element";
      if (!sym)
        continue;
      Value &v = data[sym.getPosition()];
      auto cst = [&](int64_t x) {
        return arith::ConstantIndexOp::create(b, loc, x).getResult();
      };
      v = arith::MaxSIOp::create(
          b, loc, cst(0),
          arith::MinSIOp::create(b, loc, v, cst(type.getDimSize(r) - 1)));
    }
  }
  SmallVector<Value> mapOperands(operands);
  llvm::append_range(mapOperands, data);
  PutOp::create(b, loc, value, mapOperands,
                map.replaceDimsAndSymbols(dims, symbols, operands.size(),
                                          map.getNumSymbols()),
                policy == OutOfRange::Trap ? OutOfRange::Trap
                                           : OutOfRange::Drop);
  return scatter.getResult();
}
