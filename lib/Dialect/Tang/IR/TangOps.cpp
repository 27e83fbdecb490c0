//===- TangOps.cpp - tang operations ----------------------------*- C++ -*-===//
//
// Syntax, verifiers and folds of the tang operations.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

ComprehensionOp mlir::tang::getOwningComprehension(Value index) {
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg || !arg.getOwner())
    return {};
  return dyn_cast_or_null<ComprehensionOp>(arg.getOwner()->getParentOp());
}

bool mlir::tang::isRowlessSchedule(ComprehensionOp op, ScheduleAttr s) {
  if (!s || op.getNumReduced() || op.getNumIndices() == 0)
    return false;
  unsigned last = op.getNumIndices() - 1;
  // (An extent of 1 included: one token's gate is still a block whose
  // threads share its reductions, not a row of one.)
  if (s.getTile()[last] != 1 || s.getMapping()[last] == Mapping::Serial)
    return false;
  return llvm::any_of(op.getBodyBlock(),
                      [](Operation &o) { return isa<ComprehensionOp>(o); });
}

std::optional<ColumnSchedule>
mlir::tang::getColumnSchedule(ComprehensionOp op) {
  ScheduleAttr s = op.getScheduleAttr();
  unsigned np = op.getNumParallel();
  if (!s || np == 0 || op.getNumReduced() == 0 ||
      getTarget(op).getWarpSize() != 32 ||
      (s.getKernel() != KernelKind::Auto &&
       s.getKernel() != KernelKind::Simt) ||
      hasSymbolicSizes(op) || llvm::any_of(op.getBodyBlock(), [](Operation &o) {
        return isa<ComprehensionOp>(o);
      }))
    return std::nullopt;
  ArrayRef<int64_t> tile = s.getTile(), threads = s.getThreads();
  ArrayRef<Mapping> mapping = s.getMapping();
  ColumnSchedule plan;
  plan.c = np - 1;
  plan.vector = std::max<int64_t>(1, s.getVector());
  if (mapping[plan.c] != Mapping::BlockX || threads[plan.c] != 32 ||
      tile[plan.c] != 32 * plan.vector ||
      op.getExtent(plan.c) % plan.vector != 0)
    return std::nullopt;
  for (unsigned i = 0; i < plan.c; ++i) {
    plan.outerPoints *= op.getExtent(i);
    if (tile[i] != 1 || threads[i] != 1 || mapping[i] != Mapping::BlockZ ||
        plan.outerPoints > 65535)
      return std::nullopt;
    plan.outer.push_back(i);
  }
  unsigned last = op.getNumIndices() - 1;
  plan.warps = threads[last];
  plan.rows = 1;
  for (unsigned i = np; i <= last; ++i) {
    plan.rows *= op.getExtent(i);
    if (tile[i] != op.getExtent(i) || mapping[i] != Mapping::Serial ||
        (i != last && threads[i] != 1))
      return std::nullopt;
  }
  plan.splits = s.getSplitK();
  if (plan.warps < 1 || plan.warps > 32 || plan.splits > 65535 ||
      plan.splits > plan.rows)
    return std::nullopt;
  return plan;
}

/// The builtin monoid `monoid` names, if it names one.
static std::optional<MonoidKind> getBuiltin(Attribute monoid) {
  if (auto m = dyn_cast_or_null<MonoidKindAttr>(monoid))
    return m.getValue();
  return std::nullopt;
}

/// The last operation of `b` if it is a `TerminatorOp`, else null.
template <typename TerminatorOp>
static TerminatorOp getTerminatorOf(Block &b) {
  return b.empty() ? TerminatorOp() : dyn_cast<TerminatorOp>(b.back());
}

/// Checks that every floordiv, ceildiv and mod of `map` divides by a
/// positive constant (the affine parser takes `d0 floordiv 0`; evaluating
/// it would divide by zero).
static LogicalResult verifyDivisors(Operation *op, AffineMap map) {
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    std::optional<int64_t> bad;
    expr.walk([&](AffineExpr e) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(e);
      if (!bin || e.getKind() == AffineExprKind::Add ||
          e.getKind() == AffineExprKind::Mul)
        return;
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (!c || c.getValue() <= 0)
        bad = c ? c.getValue() : 0;
    });
    if (bad)
      return op->emitOpError()
             << "coordinate #" << pos << " (" << formatAffineExpr(expr)
             << ") divides by " << *bad
             << ": floordiv, ceildiv and mod take a positive constant";
  }
  return success();
}

/// Checks that every result of `map` stays within `shape` when dimension d
/// ranges over `dimRanges[d]`. `what` names the expressions in diagnostics.
static LogicalResult verifyInBounds(Operation *op, AffineMap map,
                                    ArrayRef<IndexRange> dimRanges,
                                    ArrayRef<int64_t> shape, StringRef what) {
  if (failed(verifyDivisors(op, map)))
    return failure();
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    if (ShapedType::isDynamic(shape[pos]))
      continue;
    IndexRange r = getRange(expr, dimRanges);
    if (r.lo < 0 || r.hi >= shape[pos])
      if (std::optional<IndexRange> exact = getExactRange(expr, dimRanges))
        r = *exact;
    if (r.lo < 0 || r.hi >= shape[pos])
      return op->emitOpError()
             << what << " #" << pos << " (" << formatAffineExpr(expr)
             << ") ranges over [" << r.lo << ", " << r.hi
             << "], out of bounds for dimension " << pos << " of size "
             << shape[pos];
  }
  return success();
}

/// The comprehension or scatter whose iteration index `index` is, or null.
static Operation *getIterationScope(Value index) {
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg || !arg.getOwner())
    return nullptr;
  Operation *owner = arg.getOwner()->getParentOp();
  return isa_and_nonnull<ComprehensionOp, ScatterOp, ScanOp>(owner) ? owner
                                                                    : nullptr;
}

bool mlir::tang::isInIterationBody(Operation *op) {
  return op->getParentOfType<ComprehensionOp>() ||
         op->getParentOfType<ScatterOp>() || op->getParentOfType<ScanOp>();
}

/// Checks that `index` is an iteration index of a comprehension (or
/// scatter) enclosing `user`.
static LogicalResult verifyInScopeIndex(Operation *user, Value index,
                                        unsigned operandNo) {
  Operation *owner = getIterationScope(index);
  if (!owner || !owner->isProperAncestor(user))
    return user->emitOpError()
           << "index operand #" << operandNo
           << " is not an iteration index of an enclosing comprehension "
              "(index expressions must be affine in in-scope indices)";
  return success();
}

/// The range of the iteration index `index` (in scope, see above).
static IndexRange getIndexRange(Value index) {
  FailureOr<Size> e = getIndexExtent(index);
  // (A symbolic extent's range is checked by verifyCoordinateBounds.)
  if (failed(e) || !e->isConstant())
    return {0, 0};
  return {0, e->constant - 1};
}

/// True if the range of `expr` over `indices` is not static: it uses an
/// index of symbolic extent.
static bool hasSymbolicRange(AffineExpr expr, ValueRange indices) {
  for (auto [d, v] : llvm::enumerate(indices)) {
    if (!expr.isFunctionOfDim(d))
      continue;
    FailureOr<Size> e = getIndexExtent(v);
    if (failed(e) || !e->isConstant())
      return true;
  }
  return false;
}

/// Checks that the coordinates `map` (dimensions: `indices`, in scope;
/// symbols: data, checked as the program runs) of an access to `tensor`
/// stay in bounds. Static coordinates are checked exactly; those over a
/// symbolic extent or a `?` dimension must not be out of bounds for every
/// size (what holds for some sizes only is a size requirement, checked
/// before a run: collectSizeRequirements).
static LogicalResult verifyCoordinateBounds(Operation *op, AffineMap map,
                                            ValueRange indices, Value tensor,
                                            StringRef what) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<IndexRange> ranges = llvm::map_to_vector(indices, getIndexRange);
  bool symbolic = false;
  SmallVector<AffineExpr> static_;
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    bool usesData = false;
    expr.walk([&](AffineExpr e) { usesData |= isa<AffineSymbolExpr>(e); });
    bool open = !usesData &&
                (type.isDynamicDim(pos) || hasSymbolicRange(expr, indices));
    symbolic |= open;
    // (Data and symbolic coordinates stand as 0 here.)
    static_.push_back(
        usesData || open ? getAffineConstantExpr(0, op->getContext()) : expr);
  }
  if (failed(verifyInBounds(
          op, AffineMap::get(map.getNumDims(), 0, static_, op->getContext()),
          ranges, type.getShape(), what)))
    return failure();
  if (!symbolic)
    return success();
  FailureOr<SmallVector<SizeRequirement>> conds =
      getSymbolicBoundsConditions(op, map, indices, tensor);
  if (failed(conds))
    return failure();
  for (const SizeRequirement &c : *conds)
    if (c.expr.isConstant() && c.expr.constant < 0)
      return op->emitOpError()
             << "is out of bounds for every size: " << what << " "
             << c.what.substr(c.what.find('#')) << " fails";
  return success();
}

/// Checks that the iteration indices of `body` are used only as
/// coordinates: by reads, as dimensions of gathers and puts, by tang.index.
static LogicalResult verifyIndexUses(Block &body) {
  for (BlockArgument a : body.getArguments())
    for (Operation *user : a.getUsers()) {
      bool ok = isa<ReadOp, IndexOp>(user);
      if (auto g = dyn_cast<GatherOp>(user))
        ok = llvm::is_contained(g.getIndices(), a);
      if (auto put = dyn_cast<PutOp>(user))
        ok = llvm::is_contained(put.getIndices(), a);
      if (!ok)
        return user->emitOpError()
               << "uses iteration index #" << a.getArgNumber()
               << "; indices are used only by tang.read, tang.gather (as "
                  "dimensions) and tang.index (use tang.index to compute "
                  "with an index)";
    }
  return success();
}

/// Checks that the operations of `body` (but its terminator) compute
/// scalars: tensors enter only as the tensor operand of tang.read and
/// tang.gather.
static LogicalResult verifyScalarBody(Block &body) {
  for (Operation &op : body.without_terminator()) {
    bool reads = isa<ReadOp, GatherOp>(op);
    for (OpOperand &use : op.getOpOperands()) {
      if (use.get().getType().isIntOrIndexOrFloat() ||
          (reads && use.getOperandNumber() == 0))
        continue;
      return op.emitOpError()
             << "in a comprehension body computes scalars, but operand #"
             << use.getOperandNumber() << " has type " << use.get().getType()
             << " (tensors enter a body only through tang.read)";
    }
    for (OpResult r : op.getResults())
      if (!r.getType().isIntOrIndexOrFloat())
        return op.emitOpError()
               << "in a comprehension body computes scalars, but result #"
               << r.getResultNumber() << " has type " << r.getType();
  }
  return success();
}

/// Parses `[e0, e1, ...]`, one extent per index: an integer, or (where
/// `sizes` is given) an SSA size, recorded as ShapedType::kDynamic.
static ParseResult
parseExtents(OpAsmParser &p, size_t numIndices,
             SmallVectorImpl<int64_t> &extents,
             SmallVectorImpl<OpAsmParser::UnresolvedOperand> *sizes = nullptr) {
  SMLoc loc = p.getCurrentLocation();
  if (p.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            OpAsmParser::UnresolvedOperand size;
            SMLoc at = p.getCurrentLocation();
            OptionalParseResult r = p.parseOptionalOperand(size);
            if (!r.has_value())
              return p.parseInteger(extents.emplace_back());
            if (failed(*r))
              return failure();
            if (!sizes)
              return p.emitError(at) << "symbolic extents are supported on "
                                        "tang.comprehension only";
            sizes->push_back(size);
            extents.push_back(ShapedType::kDynamic);
            return success();
          }))
    return failure();
  if (extents.size() != numIndices)
    return p.emitError(loc, "expected ")
           << numIndices << " extents (one per index), found "
           << extents.size();
  return success();
}

/// Parses `monoid(name)` or `monoid(@symbol)` if present, into `monoid`.
static ParseResult parseOptionalMonoid(OpAsmParser &p, OperationState &st) {
  if (failed(p.parseOptionalKeyword("monoid")))
    return success();
  if (p.parseLParen())
    return failure();
  StringAttr sym;
  if (succeeded(p.parseOptionalSymbolName(sym))) {
    st.addAttribute("monoid", FlatSymbolRefAttr::get(sym));
  } else {
    SMLoc loc = p.getCurrentLocation();
    StringRef kw;
    if (p.parseKeyword(&kw))
      return failure();
    std::optional<MonoidKind> kind = symbolizeMonoidKind(kw);
    if (!kind)
      return p.emitError(loc, "unknown monoid '")
             << kw
             << "'; expected a builtin (add, mul, max, min, and, or, argmax, "
                "argmin, softmax_norm, online_softmax) or @symbol";
    st.addAttribute("monoid", MonoidKindAttr::get(p.getContext(), *kind));
  }
  return p.parseRParen();
}

static void printOptionalMonoid(OpAsmPrinter &p, Attribute m) {
  if (!m)
    return;
  p << " monoid(";
  if (auto sym = dyn_cast<FlatSymbolRefAttr>(m))
    p.printSymbolName(sym.getValue());
  else
    p << stringifyMonoidKind(cast<MonoidKindAttr>(m).getValue());
  p << ")";
}

static bool isScalar(Type t) { return t.isIntOrFloat(); }

/// The scalar type of a comprehension result (its element type if a tensor).
static Type getScalarType(Type t) {
  if (auto tt = dyn_cast<RankedTensorType>(t))
    return tt.getElementType();
  return t;
}

/// Checks a comprehension's or a scan's yields and result element types
/// against its builtin monoid (or, without one, against each other). User
/// monoids are checked in verifySymbolUses (verifyUserMonoidTypes).
static LogicalResult verifyMonoidTypes(Operation *op, Attribute monoid,
                                       TypeRange yields,
                                       ArrayRef<Type> results) {

  auto mismatch = [&](StringRef what) {
    InFlightDiagnostic d = op->emitOpError() << what << ": body yields (";
    llvm::interleaveComma(yields, d);
    d << ") and results are (";
    llvm::interleaveComma(results, d);
    d << ")";
    return d;
  };

  std::optional<MonoidKind> kind = getBuiltin(monoid);
  if (!monoid) {
    if (TypeRange(results) != yields)
      return mismatch("yield types do not match result element types");
    return success();
  }
  if (!kind)
    return success(); // User-defined monoids: checked in verifySymbolUses.

  StringRef name = stringifyMonoidKind(*kind);
  if (yields.size() != getNumMonoidYields(*kind))
    return mismatch(("monoid '" + name + "' takes " +
                     Twine(getNumMonoidYields(*kind)) + " yielded value(s)")
                        .str());
  if (results.size() != getNumMonoidResults(*kind))
    return mismatch(("monoid '" + name + "' gives " +
                     Twine(getNumMonoidResults(*kind)) + " result(s)")
                        .str());
  for (Type t : yields)
    if (!isScalar(t))
      return mismatch("yields must be integer or floating-point scalars");
  switch (*kind) {
  case MonoidKind::Add:
  case MonoidKind::Mul:
  case MonoidKind::Max:
  case MonoidKind::Min:
    if (yields[0] != results[0])
      return mismatch("yield type does not match result element type");
    break;
  case MonoidKind::And:
  case MonoidKind::Or:
    if (!yields[0].isSignlessInteger() || yields[0] != results[0])
      return mismatch(
          ("monoid '" + name + "' needs matching integer types").str());
    break;
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin:
    if (yields[0] != results[0] || yields[1] != results[1] ||
        !yields[1].isSignlessInteger())
      return mismatch(("monoid '" + name +
                       "' needs (value, integer index) yields matching results")
                          .str());
    break;
  case MonoidKind::SoftmaxNorm:
    if (!isa<FloatType>(yields[0]) || results[0] != yields[0] ||
        results[1] != yields[0])
      return mismatch("monoid 'softmax_norm' needs a float yield and (max, "
                      "sum of exp) results of its type");
    break;
  case MonoidKind::OnlineSoftmax:
    if (!isa<FloatType>(yields[0]) || !isa<FloatType>(yields[1]) ||
        results[0] != yields[1])
      return mismatch("monoid 'online_softmax' needs float (score, value) "
                      "yields and a result of the value's type");
    break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ComprehensionOp
//===----------------------------------------------------------------------===//

int64_t ComprehensionOp::getExtent(unsigned pos) {
  if (pos < getNumParallel())
    return getParallelExtents()[pos];
  return getReducedExtents()[pos - getNumParallel()];
}

Value ComprehensionOp::getDynamicExtent(unsigned pos) {
  if (!isSymbolicExtent(pos))
    return {};
  unsigned k = 0;
  for (unsigned i = 0; i < pos; ++i)
    k += isSymbolicExtent(i);
  return k < getDynamicExtents().size() ? getDynamicExtents()[k] : Value();
}

YieldOp ComprehensionOp::getYield() {
  return getTerminatorOf<YieldOp>(getBodyBlock());
}

std::optional<MonoidKind> ComprehensionOp::getBuiltinMonoid() {
  return getBuiltin(getMonoidAttr());
}

void ComprehensionOp::getAsmBlockArgumentNames(Region &region,
                                               OpAsmSetValueNameFn setName) {
  // Parallel indices print as %p0, %p1, ...; reduced ones as %r0, %r1, ...
  for (BlockArgument a : region.getArguments()) {
    unsigned n = a.getArgNumber();
    bool reduced = isReducedIndex(n);
    setName(a, (Twine(reduced ? "r" : "p") +
                Twine(reduced ? n - getNumParallel() : n))
                   .str());
  }
}

ParseResult ComprehensionOp::parse(OpAsmParser &p, OperationState &st) {
  MLIRContext *ctx = p.getContext();
  SmallVector<OpAsmParser::Argument> parallel, reduced;
  if (p.parseArgumentList(parallel, OpAsmParser::Delimiter::OptionalParen))
    return failure();
  if (succeeded(p.parseOptionalKeyword("reduce")) &&
      p.parseArgumentList(reduced, OpAsmParser::Delimiter::Paren))
    return failure();

  SmallVector<int64_t> extents;
  SmallVector<OpAsmParser::UnresolvedOperand> sizes;
  if (parseExtents(p, parallel.size() + reduced.size(), extents, &sizes) ||
      p.resolveOperands(sizes, p.getBuilder().getIndexType(), st.operands))
    return failure();
  ArrayRef<int64_t> ext(extents);
  st.addAttribute("parallel_extents",
                  DenseI64ArrayAttr::get(ctx, ext.take_front(parallel.size())));
  st.addAttribute("reduced_extents",
                  DenseI64ArrayAttr::get(ctx, ext.drop_front(parallel.size())));

  if (parseOptionalMonoid(p, st))
    return failure();
  if (p.parseOptionalAttrDictWithKeyword(st.attributes) ||
      p.parseColonTypeList(st.types))
    return failure();

  SmallVector<OpAsmParser::Argument> args(parallel);
  args.append(reduced);
  for (OpAsmParser::Argument &a : args)
    a.type = p.getBuilder().getIndexType();
  return p.parseRegion(*st.addRegion(), args);
}

void ComprehensionOp::print(OpAsmPrinter &p) {
  auto args = getBodyBlock().getArguments();
  auto printArgs = [&](auto range) {
    p << "(";
    llvm::interleaveComma(range, p, [&](BlockArgument a) { p << a; });
    p << ")";
  };
  if (getNumParallel()) {
    p << " ";
    printArgs(args.take_front(getNumParallel()));
  }
  if (getNumReduced()) {
    p << " reduce ";
    printArgs(args.drop_front(getNumParallel()));
  }
  p << " [";
  llvm::interleaveComma(llvm::seq(getNumIndices()), p, [&](unsigned pos) {
    if (isSymbolicExtent(pos))
      p << getDynamicExtent(pos);
    else
      p << getExtent(pos);
  });
  p << "]";
  printOptionalMonoid(p, getMonoidAttr());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {"parallel_extents", "reduced_extents", "monoid"});
  p << " : ";
  llvm::interleaveComma(getResultTypes(), p);
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

/// Checks the iteration domain of a comprehension or a scatter (`what`):
/// positive `extents`, one index-typed block argument of `body` each, used
/// only as coordinates (verifyIndexUses).
static LogicalResult verifyDomain(Operation *op, StringRef what,
                                  ArrayRef<int64_t> extents, Block &body) {
  for (auto [i, e] : llvm::enumerate(extents))
    if (e <= 0 && !ShapedType::isDynamic(e))
      return op->emitOpError()
             << "extent of index #" << i << " must be positive, got " << e;
  if (body.getNumArguments() != extents.size())
    return op->emitOpError()
           << "body has " << body.getNumArguments() << " arguments but the "
           << what << " has " << extents.size() << " indices";
  for (BlockArgument a : body.getArguments())
    if (!a.getType().isIndex())
      return op->emitOpError()
             << "body arguments (the indices) must be 'index', got "
             << a.getType();
  return verifyIndexUses(body);
}

/// `shape` as text, `?` for a dynamic extent.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t n) {
        if (ShapedType::isDynamic(n))
          os << "?";
        else
          os << n;
      },
      ", ");
  return s;
}

/// Checks the symbolic extents of `op`: one size operand per `?` extent,
/// each a function-level size expression, none constant and non-positive.
static LogicalResult verifySizes(ComprehensionOp op) {
  unsigned numSymbolic =
      llvm::count_if(llvm::seq(op.getNumIndices()),
                     [&](unsigned pos) { return op.isSymbolicExtent(pos); });
  if (numSymbolic != op.getDynamicExtents().size())
    return op.emitOpError()
           << "has " << numSymbolic << " symbolic extents but "
           << op.getDynamicExtents().size() << " size operands";
  for (unsigned pos = 0; pos < op.getNumIndices(); ++pos) {
    if (!op.isSymbolicExtent(pos))
      continue;
    std::string why;
    FailureOr<Size> size = getSizeOf(op.getDynamicExtent(pos), &why);
    if (failed(size))
      return op.emitOpError()
             << "extent of index #" << pos << " is not a size: " << why;
    if (size->isConstant() && size->constant <= 0)
      return op.emitOpError() << "extent of index #" << pos
                              << " must be positive, got " << size->constant;
  }
  return success();
}

LogicalResult ComprehensionOp::verify() {
  SmallVector<int64_t> extents(getParallelExtents());
  llvm::append_range(extents, getReducedExtents());
  if (failed(verifyDomain(*this, "comprehension", extents, getBodyBlock())))
    return failure();
  if (failed(verifySizes(*this)))
    return failure();

  if (getNumReduced() && !getMonoidAttr())
    return emitOpError() << "reduces over " << getNumReduced()
                         << " indices but names no monoid";
  if (!getNumReduced() && getMonoidAttr())
    return emitOpError() << "has a monoid but no reduced indices";

  if (ScheduleAttr s = getScheduleAttr())
    if (s.getTile().size() != getNumIndices())
      return emitOpError() << "schedule tiles " << s.getTile().size()
                           << " indices but the comprehension has "
                           << getNumIndices();

  if (getNumResults() == 0)
    return emitOpError() << "must have at least one result";

  // Nested comprehensions compute scalars; function-level ones tensors whose
  // shape is the parallel domain.
  bool nested = isInIterationBody(*this);
  if (nested && getNumParallel())
    return emitOpError() << "nested in a comprehension body must have no "
                            "parallel indices (it computes a scalar)";
  for (auto [i, t] : llvm::enumerate(getResultTypes())) {
    if (nested) {
      if (!isScalar(t))
        return emitOpError() << "nested in a comprehension body must produce "
                                "scalars, result #"
                             << i << " is " << t;
      continue;
    }
    auto tt = dyn_cast<RankedTensorType>(t);
    if (!tt)
      return emitOpError() << "result #" << i
                           << " must be a ranked tensor, got " << t;
    if (!isTangElementType(tt.getElementType()))
      return emitOpError() << "result #" << i << " has element type "
                           << tt.getElementType()
                           << ", not a tang element type (f64, f32, f16, "
                              "bf16, i32, i8 or i1)";
    if (tt.getShape() != getParallelExtents())
      return emitOpError() << "result #" << i << " has shape ["
                           << formatShape(tt.getShape())
                           << "] but the parallel extents are ["
                           << formatShape(getParallelExtents())
                           << "] (a symbolic extent gives a '?' dimension)";
  }
  return success();
}

/// The region of a comprehension or a scan: a scalar expression graph
/// (tensors enter only through reads and gathers) ending in a yield whose
/// types fit the monoid and the results.
static LogicalResult verifyYieldingBody(Operation *op, Block &body,
                                        Attribute monoid,
                                        TypeRange resultTypes) {
  auto yield = getTerminatorOf<YieldOp>(body);
  if (!yield)
    return op->emitOpError() << "body must end with 'tang.yield'";
  if (failed(verifyScalarBody(body)))
    return failure();
  return verifyMonoidTypes(op, monoid, yield.getValues().getTypes(),
                           llvm::map_to_vector(resultTypes, getScalarType));
}

LogicalResult ComprehensionOp::verifyRegions() {
  return verifyYieldingBody(*this, getBodyBlock(), getMonoidAttr(),
                            getResultTypes());
}

/// Checks a body's yields and the result element types of a comprehension
/// or a scan against the carrier of the user monoid `monoid` names.
static LogicalResult verifyUserMonoidTypes(Operation *op, Attribute monoid,
                                           YieldOp yield, TypeRange resultTypes,
                                           SymbolTableCollection &symbolTable) {
  auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(monoid);
  if (!sym)
    return success();
  auto user = symbolTable.lookupNearestSymbolFrom<MonoidOp>(op, sym);
  if (!user)
    return op->emitOpError()
           << "monoid " << sym << " does not name a tang.monoid";
  SmallVector<Type> carrier = user.getCarrierTypes();
  if (!yield)
    return op->emitOpError() << "body must end with 'tang.yield'";
  if (TypeRange(yield.getValues().getTypes()) != TypeRange(carrier))
    return op->emitOpError()
           << "yield types do not match the carrier of monoid " << sym;
  SmallVector<Type> results = llvm::map_to_vector(resultTypes, getScalarType);
  if (TypeRange(results) != TypeRange(carrier))
    return op->emitOpError() << "result element types do not match the "
                                "carrier of monoid "
                             << sym;
  return success();
}

LogicalResult
ComprehensionOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyUserMonoidTypes(*this, getMonoidAttr(), getYield(),
                               getResultTypes(), symbolTable);
}

//===----------------------------------------------------------------------===//
// ReadOp
//===----------------------------------------------------------------------===//

void ReadOp::build(OpBuilder &b, OperationState &st, Value tensor,
                   AffineMap map, ValueRange indices, TypedAttr fill) {
  build(b, st, cast<RankedTensorType>(tensor.getType()).getElementType(),
        tensor, indices, map, fill);
}

/// A fill literal written without a type (`fill(0.0)`, `fill(1)`) as a value
/// of the element type; null if it cannot be one.
static TypedAttr convertFill(Attribute attr, Type element) {
  auto typed = dyn_cast<TypedAttr>(attr);
  if (!typed || typed.getType() == element)
    return typed;
  if (auto ft = dyn_cast<FloatType>(element)) {
    APFloat v(0.0);
    if (auto f = dyn_cast<FloatAttr>(attr); f && f.getType().isF64())
      v = f.getValue();
    else if (auto i = dyn_cast<IntegerAttr>(attr);
             i && i.getType().isInteger(64))
      v = APFloat(static_cast<double>(i.getInt()));
    else
      return {};
    bool lost;
    v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return FloatAttr::get(ft, v);
  }
  auto i = dyn_cast<IntegerAttr>(attr);
  if (!element.isSignlessInteger() || !i || !i.getType().isInteger(64))
    return {};
  unsigned width = element.getIntOrFloatBitWidth();
  if (!llvm::isIntN(width, i.getInt()) && !llvm::isUIntN(width, i.getInt()))
    return {};
  return IntegerAttr::get(element, i.getInt());
}

ParseResult ReadOp::parse(OpAsmParser &p, OperationState &st) {
  OpAsmParser::UnresolvedOperand tensor;
  SmallVector<OpAsmParser::UnresolvedOperand> indices;
  Attribute map, fill;
  RankedTensorType type;
  if (p.parseOperand(tensor) ||
      p.parseAffineMapOfSSAIds(indices, map, "map", st.attributes))
    return failure();
  SMLoc fillAt = p.getCurrentLocation();
  if (succeeded(p.parseOptionalKeyword("fill")) &&
      (p.parseLParen() || p.parseAttribute(fill) || p.parseRParen()))
    return failure();
  if (p.parseOptionalAttrDict(st.attributes) || p.parseColonType(type) ||
      p.resolveOperand(tensor, type, st.operands) ||
      p.resolveOperands(indices, p.getBuilder().getIndexType(), st.operands))
    return failure();
  if (fill) {
    TypedAttr converted = convertFill(fill, type.getElementType());
    if (!converted)
      return p.emitError(fillAt) << "fill " << fill << " is not a value of "
                                 << type.getElementType();
    st.addAttribute("fill", converted);
  }
  st.addTypes(type.getElementType());
  return success();
}

void ReadOp::print(OpAsmPrinter &p) {
  p << " " << getTensor() << "[";
  p.printAffineMapOfSSAIds(getMapAttr(), getIndices());
  p << "]";
  if (TypedAttr fill = getFillAttr()) {
    // Untyped where the literal reads back as the same value (a decimal);
    // typed where it is hexadecimal (non-finite, or no exact decimal).
    std::string text;
    llvm::raw_string_ostream os(text);
    fill.print(os, /*elideType=*/true);
    p << " fill(";
    if (StringRef(text).ltrim('-').starts_with("0x"))
      p.printAttribute(fill);
    else
      p << text;
    p << ")";
  }
  p.printOptionalAttrDict((*this)->getAttrs(), {"map", "fill"});
  p << " : " << getTensor().getType();
}

/// tang.read and tang.gather yield one element of a statically shaped
/// tensor.
static LogicalResult verifyElementOf(Operation *op, RankedTensorType type,
                                     Type result) {
  if (result != type.getElementType())
    return op->emitOpError() << "result type " << result
                             << " is not the element type of " << type;
  return success();
}

/// tang.read and tang.index compute scalars of a comprehension's body from
/// an affine map of iteration indices: checks what they share (placement,
/// the map's symbols and dimensions, indices in scope).
static LogicalResult verifyIndexMap(Operation *op, AffineMap map,
                                    ValueRange indices) {
  if (!isInIterationBody(op))
    return op->emitOpError() << "must be inside a comprehension body";
  if (map.getNumSymbols() != 0)
    return op->emitOpError() << "index expressions may not use symbols";
  if (failed(verifyDivisors(op, map)))
    return failure();
  if (map.getNumDims() != indices.size())
    return op->emitOpError()
           << "map has " << map.getNumDims() << " dimensions but "
           << indices.size() << " index operands";
  for (auto [i, v] : llvm::enumerate(indices))
    if (failed(verifyInScopeIndex(op, v, i)))
      return failure();
  return success();
}

LogicalResult ReadOp::verify() {
  auto type = cast<RankedTensorType>(getTensor().getType());
  AffineMap map = getMap();
  if (map.getNumResults() != type.getRank())
    return emitOpError() << "reads a rank-" << type.getRank() << " tensor with "
                         << map.getNumResults() << " index expressions";
  if (failed(verifyIndexMap(*this, map, getIndices())))
    return failure();
  if (failed(verifyElementOf(*this, type, getResult().getType())))
    return failure();
  if (TypedAttr fill = getFillAttr()) {
    // Coordinates outside the tensor read the fill.
    if (fill.getType() != type.getElementType())
      return emitOpError() << "fill " << fill << " is not a value of "
                           << type.getElementType();
    return success();
  }
  return verifyCoordinateBounds(*this, map, getIndices(), getTensor(),
                                "index expression");
}

// Pattern: read(view(T, m), e) -> read(T, m o e)
OpFoldResult ReadOp::fold(FoldAdaptor) {
  auto view = getTensor().getDefiningOp<ViewOp>();
  if (!view)
    return {};
  // A padded read takes the fill outside the view; that is outside the
  // source only when the view permutes coordinates (and keeps extents: an
  // identity map may also slice).
  if (getFill()) {
    AffineMap vm = view.getMap();
    ArrayRef<int64_t> src =
        cast<RankedTensorType>(view.getSource().getType()).getShape();
    ArrayRef<int64_t> dst = cast<RankedTensorType>(view.getType()).getShape();
    if (!vm.isPermutation() ||
        llvm::any_of(llvm::enumerate(vm.getResults()), [&](auto r) {
          return src[r.index()] !=
                 dst[cast<AffineDimExpr>(r.value()).getPosition()];
        }))
      return {};
  }
  AffineMap map = view.getMap().compose(getMap());
  // Indices the composed map no longer uses are dropped (a broadcast view
  // drops coordinates): a read is then written one way only, and reads of
  // the same coordinates compare equal.
  SmallVector<Value> used;
  SmallVector<AffineExpr> renumber;
  for (auto [pos, v] : llvm::enumerate(getIndices())) {
    if (map.isFunctionOfDim(pos)) {
      renumber.push_back(getAffineDimExpr(used.size(), getContext()));
      used.push_back(v);
    } else {
      renumber.push_back(getAffineConstantExpr(0, getContext()));
    }
  }
  setMap(map.replaceDimsAndSymbols(renumber, {}, used.size(), 0));
  getIndicesMutable().assign(used);
  getTensorMutable().assign(view.getSource());
  return getResult();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

/// Checks the coordinates of a gather or a put: dimensions in scope, and
/// those without data (symbols) in bounds of `shape` now; the others are
/// checked as the program runs.
static LogicalResult verifyDataCoordinates(Operation *op, AffineMap map,
                                           ValueRange dims, Value tensor) {
  for (auto [i, v] : llvm::enumerate(dims))
    if (failed(verifyInScopeIndex(op, v, i)))
      return failure();
  return verifyCoordinateBounds(op, map, dims, tensor, "coordinate");
}

/// Parses an optional out-of-range policy keyword (the default is trap).
static ParseResult parseOutOfRange(OpAsmParser &p, OperationState &st) {
  OutOfRange policy = OutOfRange::Trap;
  StringRef word;
  SMLoc at = p.getCurrentLocation();
  if (succeeded(p.parseOptionalKeyword(&word))) {
    std::optional<OutOfRange> parsed = symbolizeOutOfRange(word);
    if (!parsed)
      return p.emitError(at) << "expected an out-of-range policy (trap, "
                                "clamp, zero or drop), got '"
                             << word << "'";
    policy = *parsed;
  }
  st.addAttribute("policy", OutOfRangeAttr::get(p.getContext(), policy));
  return success();
}

/// Parses the coordinates of a gather or a put (`[<affine map of SSA ids>]`),
/// its optional policy and attribute dictionary.
static ParseResult parseDataCoordinates(
    OpAsmParser &p, OperationState &st,
    SmallVectorImpl<OpAsmParser::UnresolvedOperand> &operands) {
  Attribute map;
  return failure(
      p.parseAffineMapOfSSAIds(operands, map, "map", st.attributes) ||
      parseOutOfRange(p, st) || p.parseOptionalAttrDict(st.attributes));
}

/// Prints what parseDataCoordinates parses.
static void printDataCoordinates(OpAsmPrinter &p, Operation *op,
                                 AffineMapAttr map, ValueRange operands,
                                 OutOfRange policy) {
  p << "[";
  p.printAffineMapOfSSAIds(map, operands);
  p << "]";
  if (policy != OutOfRange::Trap)
    p << " " << stringifyOutOfRange(policy);
  p.printOptionalAttrDict(op->getAttrs(), {"map", "policy"});
}

ParseResult GatherOp::parse(OpAsmParser &p, OperationState &st) {
  OpAsmParser::UnresolvedOperand tensor;
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  RankedTensorType type;
  if (p.parseOperand(tensor) || parseDataCoordinates(p, st, operands) ||
      p.parseColonType(type) || p.resolveOperand(tensor, type, st.operands) ||
      p.resolveOperands(operands, p.getBuilder().getIndexType(), st.operands))
    return failure();
  st.addTypes(type.getElementType());
  return success();
}

void GatherOp::print(OpAsmPrinter &p) {
  p << " " << getTensor();
  printDataCoordinates(p, *this, getMapAttr(), getMapOperands(), getPolicy());
  p << " : " << getTensor().getType();
}

LogicalResult GatherOp::verify() {
  auto type = cast<RankedTensorType>(getTensor().getType());
  AffineMap map = getMap();
  if (!isInIterationBody(*this))
    return emitOpError() << "must be inside a comprehension body";
  if (map.getNumResults() != type.getRank())
    return emitOpError() << "gathers from a rank-" << type.getRank()
                         << " tensor with " << map.getNumResults()
                         << " coordinates";
  if (map.getNumInputs() != getMapOperands().size())
    return emitOpError() << "map has " << map.getNumInputs()
                         << " dimensions and symbols but "
                         << getMapOperands().size() << " coordinate operands";
  if (map.getNumSymbols() == 0)
    return emitOpError() << "has no data coordinate (no symbol): it is a "
                            "tang.read";
  if (getPolicy() == OutOfRange::Drop)
    return emitOpError() << "cannot drop a read: give it the zero policy";
  // (An iteration index used as a symbol is refused by its comprehension.)
  if (failed(verifyElementOf(*this, type, getResult().getType())))
    return failure();
  return verifyDataCoordinates(*this, map, getIndices(), getTensor());
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

YieldOp ScanOp::getYield() { return getTerminatorOf<YieldOp>(getBodyBlock()); }

std::optional<MonoidKind> ScanOp::getBuiltinMonoid() {
  return getBuiltin(getMonoidAttr());
}

void ScanOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setName) {
  // Parallel indices print as %p0, %p1, ...; the scan index as %s0.
  for (BlockArgument a : region.getArguments())
    setName(a,
            (a.getArgNumber() < getNumParallel() ? "p" + Twine(a.getArgNumber())
                                                 : Twine("s0"))
                .str());
}

ParseResult ScanOp::parse(OpAsmParser &p, OperationState &st) {
  SmallVector<OpAsmParser::Argument> indices, scan;
  SmallVector<int64_t> extents;
  if (p.parseArgumentList(indices, OpAsmParser::Delimiter::OptionalParen) ||
      p.parseKeyword("along") ||
      p.parseArgumentList(scan, OpAsmParser::Delimiter::Paren))
    return failure();
  if (scan.size() != 1)
    return p.emitError(p.getCurrentLocation(),
                       "a scan runs along exactly one index");
  indices.append(scan);
  if (parseExtents(p, indices.size(), extents))
    return failure();
  st.addAttribute("extents", DenseI64ArrayAttr::get(p.getContext(), extents));
  if (parseOptionalMonoid(p, st) ||
      p.parseOptionalAttrDictWithKeyword(st.attributes) ||
      p.parseColonTypeList(st.types))
    return failure();
  for (OpAsmParser::Argument &a : indices)
    a.type = p.getBuilder().getIndexType();
  return p.parseRegion(*st.addRegion(), indices);
}

void ScanOp::print(OpAsmPrinter &p) {
  auto args = getBodyBlock().getArguments();
  if (getNumParallel()) {
    p << " (";
    llvm::interleaveComma(args.drop_back(), p,
                          [&](BlockArgument a) { p << a; });
    p << ")";
  }
  p << " along (" << args.back() << ") [";
  llvm::interleaveComma(getExtents(), p);
  p << "]";
  printOptionalMonoid(p, getMonoidAttr());
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {"extents", "monoid"});
  p << " : ";
  llvm::interleaveComma(getResultTypes(), p);
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

LogicalResult ScanOp::verify() {
  if (getExtents().empty())
    return emitOpError() << "needs a scan index";
  if (failed(verifyDomain(*this, "scan", getExtents(), getBodyBlock())))
    return failure();
  if (isInIterationBody(*this))
    return emitOpError() << "must be at function level (it makes tensors)";
  if (getNumResults() == 0)
    return emitOpError() << "must have at least one result";
  for (auto [i, t] : llvm::enumerate(getResultTypes())) {
    auto tt = cast<RankedTensorType>(t);
    if (tt.getShape() != getExtents())
      return emitOpError() << "result #" << i << " has shape [" << tt.getShape()
                           << "] but the domain is [" << getExtents() << "]";
    if (!isTangElementType(tt.getElementType()))
      return emitOpError() << "result #" << i << " has element type "
                           << tt.getElementType()
                           << ", not a tang element type";
  }
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  return verifyYieldingBody(*this, getBodyBlock(), getMonoidAttr(),
                            getResultTypes());
}

LogicalResult ScanOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyUserMonoidTypes(*this, getMonoidAttr(), getYield(),
                               getResultTypes(), symbolTable);
}

//===----------------------------------------------------------------------===//
// TriangularSolveOp
//===----------------------------------------------------------------------===//

LogicalResult TriangularSolveOp::verify() {
  auto lower = getLower().getType();
  auto rhs = getRhs().getType();
  if (!lower.hasStaticShape() || !rhs.hasStaticShape())
    return emitOpError() << "needs static shapes, got " << lower << " and "
                         << rhs;
  if (!isa<FloatType>(lower.getElementType()) ||
      lower.getElementType() != rhs.getElementType())
    return emitOpError() << "needs floating-point operands of one element "
                            "type, got "
                         << lower << " and " << rhs;
  int64_t rank = lower.getRank();
  if (rank < 2 || rhs.getRank() != rank)
    return emitOpError() << "needs [P..., C, C] and [P..., C, N] operands of "
                            "one rank (at least 2), got "
                         << lower << " and " << rhs;
  int64_t c = lower.getDimSize(rank - 1);
  if (lower.getDimSize(rank - 2) != c)
    return emitOpError() << "needs a square lower operand, got " << lower;
  if (lower.getShape().drop_back(2) != rhs.getShape().drop_back(2) ||
      rhs.getDimSize(rank - 2) != c)
    return emitOpError() << "needs the right-hand side [P..., " << c
                         << ", N] of the lower operand's points and rows, got "
                         << rhs;
  if (isInIterationBody(*this))
    return emitOpError() << "must be at function level (it makes tensors)";
  return success();
}

//===----------------------------------------------------------------------===//
// TensorScanOp
//===----------------------------------------------------------------------===//

unsigned TensorScanOp::getNumParallel(MonoidOp monoid) {
  auto element = cast<RankedTensorType>(getElements()[0].getType());
  auto component = cast<RankedTensorType>(monoid.getCarrierTypes()[0]);
  return element.getRank() - component.getRank() - 1;
}

LogicalResult
TensorScanOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto monoid =
      symbolTable.lookupNearestSymbolFrom<MonoidOp>(*this, getMonoidAttr());
  if (!monoid)
    return emitOpError() << "monoid " << getMonoidAttr()
                         << " does not name a tang.monoid";
  if (!monoid.isTensorMonoid())
    return emitOpError() << "monoid " << getMonoidAttr()
                         << " has a scalar carrier: scan scalars with "
                            "tang.scan";
  SmallVector<Type> carrier = monoid.getCarrierTypes();
  if (getElements().size() != carrier.size() ||
      getResults().size() != carrier.size())
    return emitOpError() << "monoid " << getMonoidAttr() << " has "
                         << carrier.size() << " carrier components: give as "
                         << "many elements and results, got "
                         << getElements().size() << " and "
                         << getResults().size();
  if (!getInit().empty() && getInit().size() != carrier.size())
    return emitOpError() << "init gives " << getInit().size()
                         << " tensors but the carrier has " << carrier.size()
                         << " components";
  if (isInIterationBody(*this))
    return emitOpError() << "must be at function level (it makes tensors)";
  // [P..., T] from element 0; every element [P..., T, C_k...].
  SmallVector<int64_t> outer;
  for (auto [k, pair] :
       llvm::enumerate(llvm::zip(getElements().getTypes(), carrier))) {
    auto [t, c] = pair;
    auto tt = cast<RankedTensorType>(t);
    auto ct = cast<RankedTensorType>(c);
    if (!tt.hasStaticShape())
      return emitOpError() << "element #" << k
                           << " must have a static shape, got " << t;
    if (tt.getElementType() != ct.getElementType() ||
        tt.getRank() < ct.getRank() + 1 ||
        tt.getShape().take_back(ct.getRank()) != ct.getShape())
      return emitOpError() << "element #" << k << " (" << t
                           << ") must be [parallel..., length, "
                           << formatShape(ct.getShape()) << "] of "
                           << ct.getElementType()
                           << " (the carrier's component " << c << ")";
    ArrayRef<int64_t> lead = tt.getShape().drop_back(ct.getRank());
    if (k == 0)
      outer.assign(lead.begin(), lead.end());
    else if (lead != ArrayRef<int64_t>(outer))
      return emitOpError() << "element #" << k << " has parallel and scan "
                           << "dimensions [" << formatShape(lead)
                           << "] but element #0 has [" << formatShape(outer)
                           << "]";
    if (getResults()[k].getType() != t)
      return emitOpError() << "result #" << k << " must have element #" << k
                           << "'s type " << t;
    if (getInit().empty())
      continue;
    SmallVector<int64_t> want(outer.begin(), outer.end() - 1);
    llvm::append_range(want, ct.getShape());
    auto it = cast<RankedTensorType>(getInit()[k].getType());
    if (it.getShape() != ArrayRef<int64_t>(want) ||
        it.getElementType() != ct.getElementType())
      return emitOpError() << "init #" << k << " must be [" << formatShape(want)
                           << "] of " << ct.getElementType() << ", got "
                           << getInit()[k].getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterOp
//===----------------------------------------------------------------------===//

PutOp ScatterOp::getPut() { return getTerminatorOf<PutOp>(getBodyBlock()); }

std::optional<MonoidKind> ScatterOp::getBuiltinMonoid() {
  return getBuiltin(getMonoidAttr());
}

void ScatterOp::getAsmBlockArgumentNames(Region &region,
                                         OpAsmSetValueNameFn setName) {
  for (BlockArgument a : region.getArguments())
    setName(a, ("p" + Twine(a.getArgNumber())).str());
}

ParseResult ScatterOp::parse(OpAsmParser &p, OperationState &st) {
  SmallVector<OpAsmParser::Argument> indices;
  SmallVector<int64_t> extents;
  OpAsmParser::UnresolvedOperand base;
  RankedTensorType type;
  if (p.parseArgumentList(indices, OpAsmParser::Delimiter::OptionalParen))
    return failure();
  if (parseExtents(p, indices.size(), extents))
    return failure();
  st.addAttribute("extents", DenseI64ArrayAttr::get(p.getContext(), extents));
  if (p.parseKeyword("into") || p.parseOperand(base) ||
      parseOptionalMonoid(p, st))
    return failure();
  if (succeeded(p.parseOptionalKeyword("deterministic")))
    st.addAttribute("deterministic", p.getBuilder().getUnitAttr());
  if (p.parseOptionalAttrDictWithKeyword(st.attributes) ||
      p.parseColonType(type) || p.resolveOperand(base, type, st.operands))
    return failure();
  st.addTypes(type);
  for (OpAsmParser::Argument &a : indices)
    a.type = p.getBuilder().getIndexType();
  return p.parseRegion(*st.addRegion(), indices);
}

void ScatterOp::print(OpAsmPrinter &p) {
  if (getNumIndices()) {
    p << " (";
    llvm::interleaveComma(getBodyBlock().getArguments(), p,
                          [&](BlockArgument a) { p << a; });
    p << ")";
  }
  p << " [";
  llvm::interleaveComma(getExtents(), p);
  p << "] into " << getBase();
  printOptionalMonoid(p, getMonoidAttr());
  if (getDeterministic())
    p << " deterministic";
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {"extents", "monoid", "deterministic"});
  p << " : " << getType() << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

LogicalResult ScatterOp::verify() {
  if (failed(verifyDomain(*this, "scatter", getExtents(), getBodyBlock())))
    return failure();
  if (isInIterationBody(*this))
    return emitOpError() << "must be at function level (it makes a tensor)";
  auto type = cast<RankedTensorType>(getBase().getType());
  if (getType() != type)
    return emitOpError() << "result type " << getType()
                         << " is not the type of its base " << type;
  if (!type.hasStaticShape())
    return emitOpError() << "needs a statically shaped base (symbolic "
                            "extents are not supported yet), got "
                         << type;
  if (!isTangElementType(type.getElementType()))
    return emitOpError() << "base has element type " << type.getElementType()
                         << ", not a tang element type (f64, f32, f16, "
                            "bf16, i32, i8 or i1)";
  return success();
}

LogicalResult ScatterOp::verifyRegions() {
  PutOp put = getPut();
  if (!put)
    return emitOpError() << "body must end with 'tang.put'";
  if (failed(verifyScalarBody(getBodyBlock())))
    return failure();
  Type element = getType().getElementType();
  std::optional<MonoidKind> kind = getBuiltinMonoid();
  if (!kind)
    return success(); // A user monoid: checked in verifySymbolUses.
  switch (*kind) {
  case MonoidKind::Add:
  case MonoidKind::Mul:
  case MonoidKind::Max:
  case MonoidKind::Min:
    return success();
  case MonoidKind::And:
  case MonoidKind::Or:
    if (element.isSignlessInteger())
      return success();
    break;
  default:
    break;
  }
  return emitOpError() << "combines under monoid '"
                       << stringifyMonoidKind(*kind)
                       << "', but a scatter combines one element with "
                          "another of type "
                       << element
                       << " (add, mul, max, min; and, or on integers; or a "
                          "user monoid of one component)";
}

LogicalResult ScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(getMonoidAttr());
  if (!sym)
    return success();
  auto monoid = symbolTable.lookupNearestSymbolFrom<MonoidOp>(*this, sym);
  if (!monoid)
    return emitOpError() << "monoid " << sym << " does not name a tang.monoid";
  SmallVector<Type> carrier = monoid.getCarrierTypes();
  if (carrier.size() != 1 || carrier[0] != getType().getElementType())
    return emitOpError() << "monoid " << sym << " must have one component of "
                         << "the element type " << getType().getElementType()
                         << " to combine elements";
  return success();
}

//===----------------------------------------------------------------------===//
// PutOp
//===----------------------------------------------------------------------===//

ParseResult PutOp::parse(OpAsmParser &p, OperationState &st) {
  OpAsmParser::UnresolvedOperand value;
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  Type type;
  return failure(
      p.parseOperand(value) || p.parseKeyword("at") ||
      parseDataCoordinates(p, st, operands) || p.parseColonType(type) ||
      p.resolveOperand(value, type, st.operands) ||
      p.resolveOperands(operands, p.getBuilder().getIndexType(), st.operands));
}

void PutOp::print(OpAsmPrinter &p) {
  p << " " << getValue() << " at ";
  printDataCoordinates(p, *this, getMapAttr(), getMapOperands(), getPolicy());
  p << " : " << getValue().getType();
}

LogicalResult PutOp::verify() {
  auto scatter = cast<ScatterOp>((*this)->getParentOp());
  auto type = cast<RankedTensorType>(scatter.getType());
  AffineMap map = getMap();
  if (map.getNumResults() != type.getRank())
    return emitOpError() << "writes a rank-" << type.getRank()
                         << " tensor with " << map.getNumResults()
                         << " coordinates";
  if (map.getNumInputs() != getMapOperands().size())
    return emitOpError() << "map has " << map.getNumInputs()
                         << " dimensions and symbols but "
                         << getMapOperands().size() << " coordinate operands";
  if (getPolicy() != OutOfRange::Trap && getPolicy() != OutOfRange::Drop)
    return emitOpError() << "policy '" << stringifyOutOfRange(getPolicy())
                         << "' is for reads; a write traps or drops";
  if (getValue().getType() != type.getElementType())
    return emitOpError() << "writes " << getValue().getType()
                         << " into a tensor of " << type.getElementType();
  return verifyDataCoordinates(*this, map, getIndices(), scatter.getResult());
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  auto src = cast<RankedTensorType>(getSource().getType());
  auto dst = cast<RankedTensorType>(getResult().getType());
  AffineMap map = getMap();
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "changes the element type from "
                         << src.getElementType() << " to "
                         << dst.getElementType();
  if (map.getNumSymbols() != 0)
    return emitOpError() << "map may not use symbols";
  if (map.getNumDims() != dst.getRank())
    return emitOpError() << "map takes " << map.getNumDims()
                         << " coordinates but the view has rank "
                         << dst.getRank();
  if (map.getNumResults() != src.getRank())
    return emitOpError() << "map gives " << map.getNumResults()
                         << " coordinates but the source has rank "
                         << src.getRank();
  if (!dst.hasStaticShape() || !src.hasStaticShape())
    return emitOpError() << "needs static shapes (symbolic extents are not "
                            "supported yet)";
  if (dst.getNumElements() == 0)
    return success();
  SmallVector<IndexRange> ranges = llvm::map_to_vector(
      dst.getShape(), [](int64_t n) { return IndexRange{0, n - 1}; });
  return verifyInBounds(*this, map, ranges, src.getShape(), "view coordinate");
}

// Pattern: view(T, identity) -> T
// Pattern: view(view(T, m1), m2) -> view(T, m1 o m2)
OpFoldResult ViewOp::fold(FoldAdaptor) {
  if (getMap().isIdentity() && getSource().getType() == getType())
    return getSource();
  auto inner = getSource().getDefiningOp<ViewOp>();
  if (!inner)
    return {};
  setMap(inner.getMap().compose(getMap()));
  getSourceMutable().assign(inner.getSource());
  return getResult();
}

//===----------------------------------------------------------------------===//
// IndexOp
//===----------------------------------------------------------------------===//

void IndexOp::build(OpBuilder &b, OperationState &st, Type type, Value index) {
  build(b, st, type, index,
        AffineMap::getMultiDimIdentityMap(1, b.getContext()));
}

ParseResult IndexOp::parse(OpAsmParser &p, OperationState &st) {
  // `tang.index %i : T` or `tang.index [affine expr of indices] : T`.
  OpAsmParser::UnresolvedOperand single;
  SmallVector<OpAsmParser::UnresolvedOperand> indices;
  OptionalParseResult hasSingle = p.parseOptionalOperand(single);
  if (hasSingle.has_value()) {
    if (failed(*hasSingle))
      return failure();
    indices.push_back(single);
    st.addAttribute("map", AffineMapAttr::get(AffineMap::getMultiDimIdentityMap(
                               1, p.getContext())));
  } else {
    Attribute map;
    if (p.parseAffineMapOfSSAIds(indices, map, "map", st.attributes))
      return failure();
  }
  Type type;
  if (p.parseOptionalAttrDict(st.attributes) || p.parseColonType(type) ||
      p.resolveOperands(indices, p.getBuilder().getIndexType(), st.operands))
    return failure();
  st.addTypes(type);
  return success();
}

void IndexOp::print(OpAsmPrinter &p) {
  if (getMap().isIdentity() && getIndices().size() == 1) {
    p << " " << getIndices().front();
  } else {
    p << " [";
    p.printAffineMapOfSSAIds(getMapAttr(), getIndices());
    p << "]";
  }
  p.printOptionalAttrDict((*this)->getAttrs(), {"map"});
  p << " : " << getResult().getType();
}

LogicalResult IndexOp::verify() {
  if (getMap().getNumResults() != 1)
    return emitOpError() << "takes one index expression, got "
                         << getMap().getNumResults();
  return verifyIndexMap(*this, getMap(), getIndices());
}

//===----------------------------------------------------------------------===//
// MonoidOp
//===----------------------------------------------------------------------===//

SmallVector<Type> MonoidOp::getCarrierTypes() {
  return llvm::map_to_vector(
      getCarrier(), [](Attribute a) { return cast<TypeAttr>(a).getValue(); });
}

bool MonoidOp::isTensorMonoid() {
  SmallVector<Type> carrier = getCarrierTypes();
  return !carrier.empty() && isa<RankedTensorType>(carrier.front());
}

/// A tensor monoid: static tensors of tang element types, no identity, a
/// combine of function-level ops on them.
static LogicalResult verifyTensorMonoid(MonoidOp op, ArrayRef<Type> carrier) {
  for (auto [i, t] : llvm::enumerate(carrier)) {
    auto tt = dyn_cast<RankedTensorType>(t);
    if (!tt)
      return op.emitOpError() << "carrier mixes tensors and scalars: "
                                 "component #"
                              << i << " is " << t;
    if (!tt.hasStaticShape())
      return op.emitOpError() << "tensor carrier component #" << i
                              << " must have a static shape, got " << t;
    if (!isTangElementType(tt.getElementType()))
      return op.emitOpError()
             << "tensor carrier component #" << i << " has element type "
             << tt.getElementType() << ", not a tang element type";
  }
  if (!op.getIdentity().empty())
    return op.emitOpError()
           << "a tensor monoid declares no identity (identity []): "
              "tang.tensor_scan starts from the first element";
  for (Operation &o : op.getCombine().front().without_terminator())
    if (!isa<ComprehensionOp, ViewOp, ScanOp, ScatterOp, arith::ConstantOp>(o))
      return o.emitOpError()
             << "cannot be in a tensor monoid's combine (comprehensions, "
                "views, scans, scatters and constants can)";
  return success();
}

LogicalResult MonoidOp::verifyRegions() {
  SmallVector<Type> carrier = getCarrierTypes();
  if (carrier.empty())
    return emitOpError() << "carrier must have at least one component";
  if (isTensorMonoid() && failed(verifyTensorMonoid(*this, carrier)))
    return failure();
  for (Type t : isTensorMonoid() ? ArrayRef<Type>() : ArrayRef<Type>(carrier))
    if (!isScalar(t))
      return emitOpError() << "carrier components must be integer or "
                              "floating-point scalars, got "
                           << t;
  if (!isTensorMonoid() && getIdentity().size() != carrier.size())
    return emitOpError() << "identity has " << getIdentity().size()
                         << " components but the carrier has "
                         << carrier.size();
  for (auto [i, a] : llvm::enumerate(getIdentity())) {
    auto typed = dyn_cast<TypedAttr>(a);
    if (!typed || !isa<IntegerAttr, FloatAttr>(a))
      return emitOpError() << "identity component #" << i
                           << " must be an integer or float constant";
    if (typed.getType() != carrier[i])
      return emitOpError() << "identity component #" << i << " has type "
                           << typed.getType() << " but the carrier's is "
                           << carrier[i];
  }
  Block &b = getCombine().front();
  SmallVector<Type> expected(carrier);
  expected.append(carrier);
  if (TypeRange(b.getArgumentTypes()) != TypeRange(expected))
    return emitOpError() << "combine must take two carrier values ("
                         << 2 * carrier.size() << " arguments of the carrier "
                         << "types), got " << b.getNumArguments()
                         << " arguments";
  auto yield = b.empty() ? YieldOp() : dyn_cast<YieldOp>(b.back());
  if (!yield)
    return emitOpError() << "combine must end with 'tang.yield'";
  if (TypeRange(yield.getValues().getTypes()) != TypeRange(carrier))
    return emitOpError() << "combine must yield the carrier types";
  return success();
}

//===----------------------------------------------------------------------===//
// Sizes: what a value or a dimension denotes
//===----------------------------------------------------------------------===//

FunctionOpInterface mlir::tang::getSizeScope(Value v) {
  Region *r = v.getParentRegion();
  return r ? r->getParentOfType<FunctionOpInterface>() : FunctionOpInterface();
}

/// The symbol number of (argument, dim) in `func`, if it is one.
static std::optional<unsigned> findSymbol(FunctionOpInterface func,
                                          unsigned arg, int dim) {
  for (auto [i, s] : llvm::enumerate(getSizeSymbols(func)))
    if (s.argNumber == arg && s.dim == dim)
      return i;
  return std::nullopt;
}

static FailureOr<Size> fail(std::string *why, const Twine &msg) {
  if (why)
    *why = msg.str();
  return failure();
}

FailureOr<Size> mlir::tang::getSizeOf(Value v, std::string *why) {
  if (!v.getType().isIndex())
    return fail(why, "a size is an 'index' value");
  FunctionOpInterface func = getSizeScope(v);
  if (!func)
    return fail(why, "a size is defined in a function");
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner()->getParentOp() != func.getOperation())
      return fail(why, "a size is a function-level value, not an iteration "
                       "index or a value computed in a body");
    return Size::symbol(*findSymbol(func, arg.getArgNumber(), -1));
  }
  Operation *def = v.getDefiningOp();
  if (def->getParentOp() != func.getOperation())
    return fail(why, "a size is a function-level value, not one computed "
                     "in a body");
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return Size::get(c.getSExtValue());
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    std::optional<int64_t> d = dim.getConstantIndex();
    auto tt = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (!d || !tt || *d < 0 || *d >= tt.getRank())
      return fail(why, "tensor.dim of a ranked tensor at a constant, valid "
                       "dimension");
    FailureOr<Size> s = getDimSize(dim.getSource(), *d);
    if (failed(s))
      return fail(why, "the size of that dimension is not known");
    return s;
  }
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def)) {
    FailureOr<Size> a = getSizeOf(def->getOperand(0), why);
    if (failed(a))
      return failure();
    FailureOr<Size> b = getSizeOf(def->getOperand(1), why);
    if (failed(b))
      return failure();
    if (isa<arith::AddIOp>(def))
      return *a + *b;
    if (isa<arith::SubIOp>(def))
      return *a - *b;
    if (b->isConstant())
      return *a * b->constant;
    if (a->isConstant())
      return *b * a->constant;
    return fail(why, "a product of two symbolic sizes is not affine");
  }
  return fail(why, "'" + def->getName().getStringRef() +
                       "' is not a size expression (index arguments, "
                       "tensor.dim, constants, arith.addi/subi, arith.muli "
                       "by a constant)");
}

FailureOr<Size> mlir::tang::getDimSize(Value tensor, unsigned d) {
  auto tt = dyn_cast<RankedTensorType>(tensor.getType());
  if (!tt || d >= tt.getRank())
    return failure();
  if (!tt.isDynamicDim(d))
    return Size::get(tt.getDimSize(d));
  if (auto arg = dyn_cast<BlockArgument>(tensor)) {
    FunctionOpInterface func = getSizeScope(tensor);
    if (!func || arg.getOwner()->getParentOp() != func.getOperation())
      return failure();
    return Size::symbol(*findSymbol(func, arg.getArgNumber(), d));
  }
  if (auto c = tensor.getDefiningOp<ComprehensionOp>()) {
    if (d >= c.getNumParallel() || !c.isSymbolicExtent(d))
      return failure();
    return getSizeOf(c.getDynamicExtent(d));
  }
  return failure();
}

FailureOr<Size> mlir::tang::getIndexExtent(Value index) {
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg || !arg.getOwner())
    return failure();
  Operation *owner = arg.getOwner()->getParentOp();
  unsigned pos = arg.getArgNumber();
  if (auto c = dyn_cast_or_null<ComprehensionOp>(owner)) {
    if (c.isSymbolicExtent(pos))
      return getSizeOf(c.getDynamicExtent(pos));
    return Size::get(c.getExtent(pos));
  }
  if (auto s = dyn_cast_or_null<ScanOp>(owner))
    return Size::get(s.getExtent(pos));
  if (auto s = dyn_cast_or_null<ScatterOp>(owner))
    return Size::get(s.getExtent(pos));
  return failure();
}

//===----------------------------------------------------------------------===//
// Bounds
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<SizeRequirement>>
mlir::tang::getSymbolicBoundsConditions(Operation *op, AffineMap map,
                                        ValueRange indices, Value tensor) {
  SmallVector<SizeRequirement> conds;
  FunctionOpInterface func = getSizeScope(tensor);
  SmallVector<SizeSymbol> symbols =
      func ? getSizeSymbols(func) : SmallVector<SizeSymbol>();
  SmallVector<Size> extents;
  for (Value i : indices) {
    FailureOr<Size> e = getIndexExtent(i);
    if (failed(e))
      return op->emitOpError() << "has an index operand whose extent is not "
                                  "known";
    extents.push_back(*e);
  }
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    // Data coordinates (the symbols of a gather's map) are checked when
    // the program runs, per the gather's policy.
    bool data = false;
    expr.walk([&](AffineExpr e) { data |= isa<AffineSymbolExpr>(e); });
    if (data)
      continue;
    FailureOr<Size> dim = getDimSize(tensor, pos);
    if (failed(dim))
      return op->emitOpError() << "reads dimension " << pos
                               << " of a tensor whose size is not known";
    bool symbolic = !dim->isConstant();
    for (unsigned d = 0; d < map.getNumDims(); ++d)
      symbolic |= expr.isFunctionOfDim(d) && !extents[d].isConstant();
    if (!symbolic)
      continue;
    std::optional<LinearForm> lin = getLinearForm(expr, map.getNumDims());
    if (!lin)
      return op->emitOpError()
             << "coordinate #" << pos << " (" << detail::formatAffineExpr(expr)
             << ") ranges over a symbolic extent and is not linear in the "
                "indices, so its bounds cannot be checked";
    Size lo = Size::get(lin->constant), hi = Size::get(lin->constant);
    for (auto [d, a] : llvm::enumerate(lin->coeffs)) {
      Size span = (extents[d] - Size::get(1)) * a;
      (a < 0 ? lo : hi) = (a < 0 ? lo : hi) + span;
    }
    std::string coord = "coordinate #" + std::to_string(pos) + " (" +
                        detail::formatAffineExpr(expr) + ")";
    conds.push_back(
        {lo, op,
         coord + ", at least " + lo.str(symbols) + ", is not negative"});
    conds.push_back({*dim - Size::get(1) - hi, op,
                     coord + ", up to " + hi.str(symbols) +
                         ", stays below dimension " + std::to_string(pos) +
                         " (" + dim->str(symbols) + ")"});
  }
  return conds;
}

SmallVector<SizeRequirement>
mlir::tang::collectSizeRequirements(FunctionOpInterface func) {
  SmallVector<SizeRequirement> reqs;
  SmallVector<SizeSymbol> symbols = getSizeSymbols(func);
  // Each condition once (reads of one tensor repeat theirs).
  auto keep = [&](ArrayRef<SizeRequirement> conds) {
    for (const SizeRequirement &r : conds)
      if (!r.expr.isProvablyNonNegative() &&
          llvm::none_of(
              reqs, [&](const SizeRequirement &q) { return q.expr == r.expr; }))
        reqs.push_back(r);
  };
  func->walk([&](Operation *op) {
    if (auto c = dyn_cast<ComprehensionOp>(op)) {
      for (unsigned pos = 0; pos < c.getNumIndices(); ++pos) {
        if (!c.isSymbolicExtent(pos))
          continue;
        FailureOr<Size> e = getSizeOf(c.getDynamicExtent(pos));
        if (succeeded(e))
          keep({{*e - Size::get(1), op,
                 "the extent of index #" + std::to_string(pos) + " (" +
                     e->str(symbols) + ") is positive"}});
      }
      return;
    }
    auto check = [&](AffineMap map, ValueRange indices, Value tensor) {
      auto conds = getSymbolicBoundsConditions(op, map, indices, tensor);
      if (succeeded(conds))
        keep(*conds);
    };
    if (auto r = dyn_cast<ReadOp>(op); r && !r.getFillAttr())
      check(r.getMap(), r.getIndices(), r.getTensor());
    else if (auto g = dyn_cast<GatherOp>(op))
      check(g.getMap(), g.getIndices(), g.getTensor());
  });
  return reqs;
}

bool mlir::tang::hasSymbolicSizes(Operation *op) {
  auto dynamic = [](Type t) {
    auto tt = dyn_cast<RankedTensorType>(t);
    return tt && !tt.hasStaticShape();
  };
  if (auto func = dyn_cast<FunctionOpInterface>(op))
    if (llvm::any_of(func.getArgumentTypes(),
                     [&](Type t) { return t.isIndex() || dynamic(t); }))
      return true;
  // A size used in a body (a position a mask compares with) is known only
  // when the program runs, like a symbolic extent.
  auto usesSize = [](Value v) {
    if (!v.getType().isIndex() || getOwningComprehension(v) ||
        v.getDefiningOp<arith::ConstantOp>())
      return false;
    FunctionOpInterface func = getSizeScope(v);
    Region *r = v.getParentRegion();
    return func && r == &func.getFunctionBody() && succeeded(getSizeOf(v));
  };
  WalkResult r = op->walk([&](Operation *o) {
    if (auto c = dyn_cast<ComprehensionOp>(o);
        c && !c.getDynamicExtents().empty())
      return WalkResult::interrupt();
    if (llvm::any_of(o->getOperandTypes(), dynamic) ||
        llvm::any_of(o->getResultTypes(), dynamic) ||
        (isInIterationBody(o) && llvm::any_of(o->getOperands(), usesSize)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

#define GET_OP_CLASSES
#include "Tang/Dialect/Tang/IR/TangOps.cpp.inc"
