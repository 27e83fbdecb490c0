//===- GradScatterScan.cpp - gradients of scatters and scans ----*- C++ -*-===//
//
// The derivative rules of the two function-level ops that are not
// comprehensions:
//
//  * a scatter: the base's cotangent is the result's (an insert zeroes the
//    elements it overwrote); the written values' cotangent is the result's
//    cotangent gathered at the coordinates they were written to;
//  * a tensor scan of affine maps, S_t = A_t S_{t-1} + B_t: the states'
//    cotangent L_t = dS_t + A_{t+1}^T L_{t+1} is a tensor scan of the
//    transposed transitions, backwards; dB_t = L_t, dA_t = L_t S_{t-1}^T,
//    dS_init = A_0^T L_0;
//  * a scan y[t] = f(y[t-1], x[t]) under a monoid f: the cotangent G[t] of
//    every prefix follows the reverse linear recurrence
//    G[t] = dy[t] + (df/da at t+1)^T G[t+1], itself a scan (under `add` for
//    an `add` scan, under the composition of affine maps otherwise) run
//    backwards; the elements get (df/db at t)^T G[t].
//
// Both first have their written values (a scan's elements) materialised as
// a comprehension over their domain (splitBodies), so that the reads in
// those bodies are differentiated by the comprehension rules.
//
//===----------------------------------------------------------------------===//

#include "GradInternal.h"

#include "Tang/Dialect/Tang/IR/TangMonoids.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

namespace {

/// A monoid as written: `add`, `@welford`.
std::string formatMonoid(Attribute monoid) {
  if (auto kind = dyn_cast<MonoidKindAttr>(monoid))
    return stringifyMonoidKind(kind.getValue()).str();
  return ("@" + cast<FlatSymbolRefAttr>(monoid).getValue()).str();
}

/// A map from a domain of `n` indices whose first `np` (the parallel ones)
/// pass through, then `rest`.
AffineMap parallelMap(MLIRContext *ctx, unsigned np, unsigned n,
                      ArrayRef<AffineExpr> rest) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < np; ++i)
    exprs.push_back(getAffineDimExpr(i, ctx));
  llvm::append_range(exprs, rest);
  return AffineMap::get(n, 0, exprs, ctx);
}

/// A comprehension of `e` elements over `shape` (summing over `reduced`)
/// whose body `fill` writes from the block's indices.
Value buildComprehension(OpBuilder &b, Location loc, Type e,
                         ArrayRef<int64_t> shape, ArrayRef<int64_t> reduced,
                         function_ref<Value(ArrayRef<Value>)> fill) {
  MLIRContext *ctx = b.getContext();
  auto c = ComprehensionOp::create(
      b, loc, TypeRange{RankedTensorType::get(shape, e)}, shape, reduced,
      reduced.empty() ? Attribute() : MonoidKindAttr::get(ctx, MonoidKind::Add),
      ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (size_t i = 0; i < shape.size() + reduced.size(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  YieldOp::create(b, loc, ValueRange{fill(idx)});
  return c.getResult(0);
}

/// The tensor `v` reads when it is a read at the identity of `body`'s
/// indices of a tensor shaped like the domain `extents`, else null.
Value getIdentityRead(Value v, Block &body, ArrayRef<int64_t> extents) {
  auto read = v.getDefiningOp<ReadOp>();
  if (!read || read->getBlock() != &body || !read.getMap().isIdentity() ||
      read.getFill() || !llvm::equal(read.getIndices(), body.getArguments()))
    return {};
  auto type = cast<RankedTensorType>(read.getTensor().getType());
  return type.getShape() == extents ? read.getTensor() : Value();
}

/// Moves the values `yields` of `body` (a scatter's or scan's, over the
/// domain `extents`) to a comprehension before `op` whose results they
/// are, and makes `body` read them there instead; ops of `body` left
/// unused are erased. Values that already are identity reads stay.
void materialize(Operation *op, Block &body, ArrayRef<int64_t> extents,
                 MutableArrayRef<OpOperand> yields) {
  SmallVector<OpOperand *> moved;
  for (OpOperand &y : yields)
    if (isa<FloatType>(y.get().getType()) &&
        !getIdentityRead(y.get(), body, extents))
      moved.push_back(&y);
  if (moved.empty())
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Type> types;
  for (OpOperand *y : moved)
    types.push_back(RankedTensorType::get(extents, y->get().getType()));
  auto c = ComprehensionOp::create(b, loc, types, extents, ArrayRef<int64_t>{},
                                   Attribute(), ScheduleAttr());
  Block *cBody = b.createBlock(&c.getBody());
  IRMapping map;
  for (BlockArgument a : body.getArguments())
    map.map(a, cBody->addArgument(b.getIndexType(), loc));
  for (Operation &inner : body.without_terminator())
    b.clone(inner, map);
  SmallVector<Value> values;
  for (OpOperand *y : moved)
    values.push_back(map.lookupOrDefault(y->get()));
  YieldOp::create(b, loc, values);
  b.setInsertionPoint(body.getTerminator());
  AffineMap id =
      AffineMap::getMultiDimIdentityMap(extents.size(), b.getContext());
  for (auto [k, y] : llvm::enumerate(moved))
    y->set(ReadOp::create(b, loc, c.getResult(k), id, body.getArguments()));
  SmallVector<Operation *> ops =
      llvm::to_vector(llvm::make_pointer_range(body.without_terminator()));
  for (Operation *inner : llvm::reverse(ops))
    if (isOpTriviallyDead(inner))
      inner->erase();
}

/// The combine of the scan's monoid at `b` (at the end of its block), and
/// the ops it made, in order.
SmallVector<Value> emitCombine(OpBuilder &b, Location loc, ScanOp scan,
                               ValueRange x, ValueRange y,
                               SmallVector<Operation *> &ops) {
  Block *block = b.getInsertionBlock();
  size_t before = block->getOperations().size();
  SmallVector<Value> results;
  if (std::optional<MonoidKind> kind = scan.getBuiltinMonoid()) {
    results = buildBuiltinCombine(b, loc, *kind, x, y);
  } else {
    auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
        scan, cast<FlatSymbolRefAttr>(scan.getMonoidAttr()));
    Block &combine = monoid.getCombine().front();
    IRMapping map;
    for (auto [a, v] :
         llvm::zip(combine.getArguments(), llvm::concat<const Value>(x, y)))
      map.map(a, v);
    for (Operation &op : combine.without_terminator())
      b.clone(op, map);
    for (Value v : combine.getTerminator()->getOperands())
      results.push_back(map.lookupOrDefault(v));
  }
  for (Operation &op : llvm::drop_begin(block->getOperations(), before))
    ops.push_back(&op);
  return results;
}

/// The monoid's identity, one constant per carrier component.
SmallVector<Value> emitIdentity(OpBuilder &b, Location loc, ScanOp scan) {
  SmallVector<TypedAttr> attrs;
  if (std::optional<MonoidKind> kind = scan.getBuiltinMonoid()) {
    SmallVector<Type> carrier;
    for (Value r : scan.getResults())
      carrier.push_back(cast<RankedTensorType>(r.getType()).getElementType());
    attrs = getBuiltinIdentity(*kind, carrier);
  } else {
    auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
        scan, cast<FlatSymbolRefAttr>(scan.getMonoidAttr()));
    for (Attribute a : monoid.getIdentity())
      attrs.push_back(cast<TypedAttr>(a));
  }
  SmallVector<Value> values;
  for (TypedAttr a : attrs)
    values.push_back(arith::ConstantOp::create(b, loc, a));
  return values;
}

/// `tang.monoid @name : [n*n + n x type]`: the composition of the affine
/// maps h -> M h + c of R^n, first then second: (M2 M1, M2 c1 + c2); M
/// row-major, then c. The reverse recurrence of a scan's cotangents is a
/// scan under it.
FlatSymbolRefAttr getAffineCompositionMonoid(ModuleOp module, unsigned n,
                                             Type type) {
  std::string name;
  llvm::raw_string_ostream os(name);
  os << "tang_grad_affine" << n << "_" << type;
  MLIRContext *ctx = module.getContext();
  auto ref = FlatSymbolRefAttr::get(ctx, name);
  if (module.lookupSymbol(name))
    return ref;
  unsigned size = n * n + n;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  SmallVector<Attribute> identity;
  for (unsigned i = 0; i < n; ++i)
    for (unsigned k = 0; k < n; ++k)
      identity.push_back(b.getFloatAttr(type, i == k ? 1.0 : 0.0));
  for (unsigned i = 0; i < n; ++i)
    identity.push_back(b.getFloatAttr(type, 0.0));
  auto monoid =
      MonoidOp::create(b, loc, b.getStringAttr(name),
                       b.getTypeArrayAttr(SmallVector<Type>(size, type)),
                       b.getArrayAttr(identity), /*commutative=*/UnitAttr());
  Block *body = b.createBlock(&monoid.getCombine());
  for (unsigned i = 0; i < 2 * size; ++i)
    body->addArgument(type, loc);
  auto m1 = [&](unsigned i, unsigned k) {
    return body->getArgument(i * n + k);
  };
  auto c1 = [&](unsigned i) { return body->getArgument(n * n + i); };
  auto m2 = [&](unsigned i, unsigned k) {
    return body->getArgument(size + i * n + k);
  };
  auto c2 = [&](unsigned i) { return body->getArgument(size + n * n + i); };
  // sum_l m2(i, l) v(l) [+ init]
  auto dot = [&](unsigned i, function_ref<Value(unsigned)> v,
                 Value init) -> Value {
    Value s = init;
    for (unsigned l = 0; l < n; ++l) {
      Value p = arith::MulFOp::create(b, loc, m2(i, l), v(l));
      s = s ? arith::AddFOp::create(b, loc, s, p).getResult() : p;
    }
    return s;
  };
  SmallVector<Value> results;
  for (unsigned i = 0; i < n; ++i)
    for (unsigned k = 0; k < n; ++k)
      results.push_back(dot(i, [&](unsigned l) { return m1(l, k); }, {}));
  for (unsigned i = 0; i < n; ++i)
    results.push_back(dot(i, c1, c2(i)));
  YieldOp::create(b, loc, results);
  return ref;
}

} // namespace

void mlir::tang::grad::splitBodies(func::FuncOp f) {
  for (Operation &op :
       llvm::make_early_inc_range(f.getBody().front().without_terminator())) {
    if (auto s = dyn_cast<ScatterOp>(op))
      materialize(s, s.getBodyBlock(), s.getExtents(),
                  s.getPut().getValueMutable());
    else if (auto scan = dyn_cast<ScanOp>(op))
      materialize(scan, scan.getBodyBlock(), scan.getExtents(),
                  scan.getYield()->getOpOperands());
  }
}

bool Differentiator::prepareScatter(ScatterOp s, LogicalResult &status) {
  status = success();
  PutOp put = s.getPut();
  Value written =
      getIdentityRead(put.getValue(), s.getBodyBlock(), s.getExtents());
  bool valueNeeds = written && needsGradient.contains(written);
  bool baseNeeds = needsGradient.contains(s.getBase());
  if (!valueNeeds && !baseNeeds)
    return false;
  if (s.getMonoidAttr() && s.getBuiltinMonoid() != MonoidKind::Add) {
    status = s.emitOpError()
             << "combines under a monoid --tang-grad has no derivative "
                "rule for ("
             << formatMonoid(s.getMonoidAttr())
             << "); an insert and a scatter-add have one";
    return false;
  }
  if (valueNeeds && !s.getMonoidAttr()) {
    // Where two points write one element, only the later one's value
    // survives: the rule below gives the cotangent to both. Points never
    // collide when every index is a coordinate of its own.
    for (BlockArgument index : s.getBodyBlock().getArguments()) {
      bool own = llvm::any_of(put.getMap().getResults(), [&](AffineExpr e) {
        auto d = dyn_cast<AffineDimExpr>(e);
        return d && put.getIndices()[d.getPosition()] == index;
      });
      if (own)
        continue;
      status = s.emitOpError()
               << "cannot be differentiated: its points may write one "
                  "element more than once (index #"
               << index.getArgNumber()
               << " is not a coordinate of its own), and only the last "
                  "write's value would have a gradient";
      return false;
    }
  }
  return true;
}

LogicalResult Differentiator::differentiateScatter(ScatterOp s, Value dOut) {
  OpBuilder &b = builder;
  Location loc = s.getLoc();
  PutOp put = s.getPut();
  auto type = cast<RankedTensorType>(s.getType());
  Type e = type.getElementType();
  ArrayRef<int64_t> extents = s.getExtents();
  // A body before the return computing the coordinates as s's does.
  auto cloneCoordinates = [&](Block *body) {
    IRMapping map;
    for (BlockArgument a : s.getBodyBlock().getArguments())
      map.map(a, body->addArgument(b.getIndexType(), loc));
    for (Operation &op : s.getBodyBlock().without_terminator())
      b.clone(op, map);
    SmallVector<Value> operands;
    for (Value v : put.getMapOperands())
      operands.push_back(map.lookupOrDefault(v));
    return operands;
  };
  if (needsGradient.contains(s.getBase())) {
    Value d = dOut;
    if (!s.getMonoidAttr()) {
      // The elements the insert overwrote do not reach the result.
      auto masked = ScatterOp::create(b, loc, type, dOut, extents, Attribute(),
                                      /*deterministic=*/false);
      OpBuilder::InsertionGuard guard(b);
      Block *body = b.createBlock(&masked.getBody());
      SmallVector<Value> operands = cloneCoordinates(body);
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
      PutOp::create(b, loc, zero, operands, put.getMap(), put.getPolicy());
      d = masked.getResult();
    }
    contributions[s.getBase()].push_back(Part{d, AffineMap(), {}});
  }
  Value written =
      getIdentityRead(put.getValue(), s.getBodyBlock(), s.getExtents());
  if (!written || !needsGradient.contains(written))
    return success();
  // The written values' cotangent: the result's at their coordinates; a
  // dropped write has none, a clamped one the clamped element's.
  auto dValue =
      ComprehensionOp::create(b, loc, TypeRange{written.getType()}, extents,
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&dValue.getBody());
    SmallVector<Value> operands = cloneCoordinates(body);
    Value g;
    if (put.getMap().getNumSymbols() == 0) {
      g = ReadOp::create(b, loc, dOut, put.getMap(), operands);
    } else {
      OutOfRange policy = put.getPolicy();
      if (policy == OutOfRange::Drop)
        policy = OutOfRange::Zero;
      g = GatherOp::create(b, loc, e, dOut, operands, put.getMap(), policy);
    }
    Type w = cast<RankedTensorType>(written.getType()).getElementType();
    YieldOp::create(b, loc, ValueRange{castFloat(b, loc, g, w)});
  }
  contributions[written].push_back(Part{dValue.getResult(0), AffineMap(), {}});
  ++numGradients;
  return success();
}

LogicalResult Differentiator::differentiateScan(ScanOp scan,
                                                ArrayRef<Value> dY) {
  OpBuilder &b = builder;
  Location loc = scan.getLoc();
  MLIRContext *ctx = b.getContext();
  Block &scanBody = scan.getBodyBlock();
  ArrayRef<int64_t> extents = scan.getExtents();
  unsigned rank = extents.size(), n = scan.getNumResults();
  int64_t T = extents.back();
  // The elements, each a tensor over the domain (splitBodies).
  SmallVector<Value> xs;
  bool any = false;
  for (Value y : scan.getYield().getValues()) {
    xs.push_back(getIdentityRead(y, scanBody, extents));
    any |= xs.back() && needsGradient.contains(xs.back());
  }
  if (!any)
    return success();
  std::optional<MonoidKind> kind = scan.getBuiltinMonoid();
  if (kind && !llvm::is_contained({MonoidKind::Add, MonoidKind::Mul,
                                   MonoidKind::Max, MonoidKind::Min},
                                  *kind))
    return scan.emitOpError() << "scans under a monoid --tang-grad has no "
                                 "derivative rule for ("
                              << stringifyMonoidKind(*kind)
                              << "); add, mul, max, min and tang.monoid "
                                 "monoids of floats have one";
  for (Value r : scan.getResults())
    if (!isa<FloatType>(cast<RankedTensorType>(r.getType()).getElementType()))
      return scan.emitOpError()
             << "scans a carrier that is not floating point: --tang-grad "
                "differentiates scans of floats";
  if (llvm::is_contained(xs, Value()))
    return scan.emitOpError()
           << "has an element --tang-grad could not materialise as a tensor";
  // Maps over the domain (p..., u): the time t = T - 1 - u reversed.
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto mapWithLast = [&](AffineExpr last) {
    SmallVector<AffineExpr> exprs;
    for (unsigned i = 0; i + 1 < rank; ++i)
      exprs.push_back(dim(i));
    exprs.push_back(last);
    return AffineMap::get(rank, 0, exprs, ctx);
  };
  AffineMap reversed = mapWithLast(T - 1 - dim(rank - 1));
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  auto addIndices = [&](Block *body) {
    SmallVector<Value> idx;
    for (unsigned i = 0; i < rank; ++i)
      idx.push_back(body->addArgument(b.getIndexType(), loc));
    return idx;
  };
  auto zeroOf = [&](Type t) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, 0.0));
  };
  auto isFirst = [&](Value index) -> Value {
    Value i = IndexOp::create(b, loc, b.getI32Type(), index);
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, i,
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)).getResult());
  };

  if (kind == MonoidKind::Add) {
    // G[t] = sum_{s >= t} dy[s], componentwise: a reverse scan under add.
    for (unsigned j = 0; j < n; ++j) {
      if (!xs[j] || !needsGradient.contains(xs[j]) || !dY[j])
        continue;
      Type t = cast<RankedTensorType>(dY[j].getType()).getElementType();
      auto g = ScanOp::create(b, loc, TypeRange{dY[j].getType()}, extents,
                              scan.getMonoidAttr());
      OpBuilder::InsertionGuard guard(b);
      Block *body = b.createBlock(&g.getBody());
      SmallVector<Value> idx = addIndices(body);
      Value d = ReadOp::create(b, loc, dY[j], reversed, idx);
      YieldOp::create(b, loc, ValueRange{castFloat(b, loc, d, t)});
      contributions[xs[j]].push_back(Part{g.getResult(0), reversed, {}});
      ++numGradients;
    }
    return success();
  }

  // The general rule: G[t] = dy[t] + A(t+1)^T G[t+1], A(t) = df/da at
  // (y[t-1], x[t]); a scan under the composition of h -> A^T h + dy run
  // backwards (u = T - 1 - t), whose last components are G.
  Type ct = getStatisticsType(
      cast<RankedTensorType>(scan.getResult(0).getType()).getElementType());
  FlatSymbolRefAttr affine =
      getAffineCompositionMonoid(grad->getParentOfType<ModuleOp>(), n, ct);
  unsigned size = n * n + n;
  SmallVector<Type> carrier(size, RankedTensorType::get(extents, ct));
  auto reverse = ScanOp::create(b, loc, carrier, extents, affine);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&reverse.getBody());
    SmallVector<Value> idx = addIndices(body);
    // a = y[t], x = x[t + 1] (wrapped at u = 0, where A is not used).
    SmallVector<Value> a, x;
    for (unsigned j = 0; j < n; ++j) {
      a.push_back(ReadOp::create(b, loc, scan.getResult(j), reversed, idx));
      x.push_back(ReadOp::create(b, loc, xs[j],
                                 mapWithLast((T - dim(rank - 1)) % T), idx));
    }
    SmallVector<Operation *> ops;
    SmallVector<Value> f = emitCombine(b, loc, scan, a, x, ops);
    Value first = isFirst(idx.back());
    SmallVector<Value> yields(size);
    for (unsigned k = 0; k < n; ++k) {
      llvm::DenseMap<Value, Value> adjoint;
      Type fk = f[k].getType();
      adjoint[f[k]] =
          arith::ConstantOp::create(b, loc, b.getFloatAttr(fk, 1.0));
      if (failed(backpropagate(b, ops, adjoint, {})))
        return failure();
      for (unsigned i = 0; i < n; ++i) {
        Value m = adjoint.lookup(a[i]);
        m = m ? castFloat(b, loc, m, ct) : zeroOf(ct);
        yields[i * n + k] =
            arith::SelectOp::create(b, loc, first, zeroOf(ct), m);
      }
    }
    for (unsigned j = 0; j < n; ++j)
      yields[n * n + j] =
          dY[j] ? castFloat(b, loc,
                            ReadOp::create(b, loc, dY[j], reversed, idx), ct)
                : zeroOf(ct);
    YieldOp::create(b, loc, yields);
  }
  // dx[t] = B(t)^T G[t], B(t) = df/db at (y[t-1], x[t]) (the identity
  // before the first).
  SmallVector<Type> types;
  SmallVector<unsigned> wanted;
  for (unsigned j = 0; j < n; ++j)
    if (xs[j] && needsGradient.contains(xs[j])) {
      wanted.push_back(j);
      types.push_back(xs[j].getType());
    }
  auto dX = ComprehensionOp::create(b, loc, types, extents, ArrayRef<int64_t>{},
                                    Attribute(), ScheduleAttr());
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&dX.getBody());
    SmallVector<Value> idx = addIndices(body);
    Value first = isFirst(idx.back());
    SmallVector<Value> identity = emitIdentity(b, loc, scan);
    AffineMap previous = mapWithLast((dim(rank - 1) + T - 1) % T);
    SmallVector<Value> a, x;
    for (unsigned j = 0; j < n; ++j) {
      Value prev = ReadOp::create(b, loc, scan.getResult(j), previous, idx);
      a.push_back(arith::SelectOp::create(b, loc, first, identity[j], prev));
      x.push_back(ReadOp::create(b, loc, xs[j], id, idx));
    }
    SmallVector<Operation *> ops;
    SmallVector<Value> f = emitCombine(b, loc, scan, a, x, ops);
    llvm::DenseMap<Value, Value> adjoint;
    for (unsigned k = 0; k < n; ++k) {
      Value g =
          ReadOp::create(b, loc, reverse.getResult(n * n + k), reversed, idx);
      adjoint[f[k]] = castFloat(b, loc, g, f[k].getType());
    }
    if (failed(backpropagate(b, ops, adjoint, {})))
      return failure();
    SmallVector<Value> yields;
    for (unsigned j : wanted) {
      Type t = cast<RankedTensorType>(xs[j].getType()).getElementType();
      Value d = adjoint.lookup(x[j]);
      yields.push_back(d ? castFloat(b, loc, d, t) : zeroOf(t));
    }
    YieldOp::create(b, loc, yields);
  }
  for (auto [k, j] : llvm::enumerate(wanted))
    contributions[xs[j]].push_back(Part{dX.getResult(k), AffineMap(), {}});
  ++numGradients;
  return success();
}

LogicalResult Differentiator::differentiateTensorScan(TensorScanOp scan,
                                                      ArrayRef<Value> dY) {
  Value dS = dY[1];
  if (!dS)
    return success();
  OpBuilder &b = builder;
  Location loc = scan.getLoc();
  MLIRContext *ctx = b.getContext();
  Value a = scan.getElements()[0], input = scan.getElements()[1];
  Value states = scan.getResult(1);
  Value init = scan.getInit().empty() ? Value() : scan.getInit()[1];
  auto aType = cast<RankedTensorType>(a.getType());
  auto sType = cast<RankedTensorType>(states.getType());
  unsigned rank = sType.getRank(), np = rank - 3;
  int64_t T = sType.getDimSize(np), K = sType.getDimSize(np + 1),
          V = sType.getDimSize(np + 2);
  Type e = sType.getElementType();
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](unsigned n, ArrayRef<AffineExpr> rest) {
    return parallelMap(ctx, np, n, rest);
  };
  auto build = [&](ArrayRef<int64_t> shape, ArrayRef<int64_t> reduced,
                   function_ref<Value(ArrayRef<Value>)> fill) {
    return buildComprehension(b, loc, e, shape, reduced, fill);
  };
  SmallVector<int64_t> outer(sType.getShape().take_front(np + 1));
  auto shapeOf = [&](ArrayRef<int64_t> tail) {
    SmallVector<int64_t> s(outer);
    llvm::append_range(s, tail);
    return s;
  };
  auto cast = [&](Value v) { return castFloat(b, loc, v, e); };

  // Backwards (u = T - 1 - t): the transitions transposed, A_{t+1}^T at u
  // (A_0's at u = 0, never applied: the fold starts from its first
  // element), and the states' cotangents.
  Value at = build(shapeOf({K, K}), {}, [&](ArrayRef<Value> idx) {
    return cast(ReadOp::create(
        b, loc, a, map(np + 3, {(T - dim(np)) % T, dim(np + 2), dim(np + 1)}),
        idx));
  });
  Value bt = build(shapeOf({K, V}), {}, [&](ArrayRef<Value> idx) {
    return cast(ReadOp::create(
        b, loc, dS, map(np + 3, {T - 1 - dim(np), dim(np + 1), dim(np + 2)}),
        idx));
  });
  auto back = TensorScanOp::create(b, loc, TypeRange{aType.clone(e), sType},
                                   scan.getMonoidAttr(), ValueRange{at, bt},
                                   ValueRange{});
  Value lam = back.getResult(1);
  // L_t = back[T - 1 - t].
  AffineMap reversed = map(rank, {T - 1 - dim(np), dim(np + 1), dim(np + 2)});
  if (needsGradient.contains(input))
    contributions[input].push_back(Part{lam, reversed, {}});
  if (needsGradient.contains(a)) {
    // dA_t[i, k] = sum_j L_t[i, j] S_{t-1}[k, j], S_{-1} the init's.
    Value da = build(shapeOf({K, K}), {V}, [&](ArrayRef<Value> idx) {
      Value l = ReadOp::create(
          b, loc, lam, map(np + 4, {T - 1 - dim(np), dim(np + 1), dim(np + 3)}),
          idx);
      Value prev = ReadOp::create(
          b, loc, states, map(np + 4, {dim(np) - 1, dim(np + 2), dim(np + 3)}),
          idx, b.getFloatAttr(e, 0.0));
      if (init) {
        Value s0 = cast(ReadOp::create(
            b, loc, init, map(np + 4, {dim(np + 2), dim(np + 3)}), idx));
        Value t = IndexOp::create(b, loc, b.getI32Type(), idx[np]);
        Value first = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, t,
            arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
        prev = arith::SelectOp::create(b, loc, first, s0, prev);
      }
      return arith::MulFOp::create(b, loc, l, prev).getResult();
    });
    contributions[a].push_back(Part{da, AffineMap(), {}});
  }
  if (init && needsGradient.contains(init)) {
    // dS_init[i, j] = sum_k A_0[k, i] L_0[k, j].
    SmallVector<int64_t> shape(sType.getShape().take_front(np));
    shape.append({K, V});
    Value ds0 = build(shape, {K}, [&](ArrayRef<Value> idx) {
      Value x = cast(ReadOp::create(
          b, loc, a,
          map(np + 3, {getAffineConstantExpr(0, ctx), dim(np + 2), dim(np)}),
          idx));
      Value l = ReadOp::create(b, loc, lam,
                               map(np + 3, {getAffineConstantExpr(T - 1, ctx),
                                            dim(np + 2), dim(np + 1)}),
                               idx);
      return arith::MulFOp::create(b, loc, x, l).getResult();
    });
    contributions[init].push_back(Part{ds0, AffineMap(), {}});
  }
  ++numGradients;
  return success();
}

LogicalResult
Differentiator::differentiateTriangularSolve(TriangularSolveOp solve,
                                             Value dX) {
  if (!dX)
    return success();
  OpBuilder &b = builder;
  Location loc = solve.getLoc();
  MLIRContext *ctx = b.getContext();
  Value lower = solve.getLower(), rhs = solve.getRhs(), x = solve.getResult();
  RankedTensorType type = solve.getType();
  unsigned rank = type.getRank(), np = rank - 2;
  int64_t C = type.getDimSize(np), N = type.getDimSize(np + 1);
  Type e = type.getElementType();
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](unsigned n, ArrayRef<AffineExpr> rest) {
    return parallelMap(ctx, np, n, rest);
  };
  auto build = [&](ArrayRef<int64_t> tail, ArrayRef<int64_t> reduced,
                   function_ref<Value(ArrayRef<Value>)> fill) {
    SmallVector<int64_t> shape(type.getShape().take_front(np));
    llvm::append_range(shape, tail);
    return buildComprehension(b, loc, e, shape, reduced, fill);
  };
  // X = (I - L)^-1 Y gives dY = (I - L)^-T dX, an upper-triangular system:
  // dY[r] = dX[r] + sum_{s > r} L[s, r] dY[s]. With rows reversed (r' = C -
  // 1 - r) it is lower again, M[r', s'] = L[C - 1 - s', C - 1 - r'], and
  // dY[r] = Z[C - 1 - r] for Z = (I - M)^-1 dX reversed.
  AffineExpr last = getAffineConstantExpr(C - 1, ctx);
  Value m = build({C, C}, {}, [&](ArrayRef<Value> idx) {
    return ReadOp::create(b, loc, lower,
                          map(np + 2, {last - dim(np + 1), last - dim(np)}),
                          idx)
        .getResult();
  });
  Value z0 = build({C, N}, {}, [&](ArrayRef<Value> idx) {
    return ReadOp::create(b, loc, dX,
                          map(np + 2, {last - dim(np), dim(np + 1)}), idx)
        .getResult();
  });
  Value z = TriangularSolveOp::create(b, loc, z0.getType(), m, z0).getResult();
  if (needsGradient.contains(rhs))
    contributions[rhs].push_back(
        Part{z, map(rank, {last - dim(np), dim(np + 1)}), {}});
  if (needsGradient.contains(lower)) {
    // dL[r, s] = sum_n dY[r, n] X[s, n] below the diagonal (the entries a
    // solve reads), zero elsewhere.
    Value dl = build({C, C}, {N}, [&](ArrayRef<Value> idx) {
      Value dy = ReadOp::create(
          b, loc, z, map(np + 3, {last - dim(np), dim(np + 2)}), idx);
      Value xs = ReadOp::create(b, loc, x,
                                map(np + 3, {dim(np + 1), dim(np + 2)}), idx);
      Value p = arith::MulFOp::create(b, loc, dy, xs);
      Value r = IndexOp::create(b, loc, b.getI32Type(), idx[np]);
      Value s = IndexOp::create(b, loc, b.getI32Type(), idx[np + 1]);
      Value below =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, s, r);
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
      return arith::SelectOp::create(b, loc, below, p, zero).getResult();
    });
    contributions[lower].push_back(Part{dl, AffineMap(), {}});
  }
  ++numGradients;
  return success();
}
