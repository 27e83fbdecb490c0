//===- Compiler.cpp - comprehension bodies as closures ----------*- C++ -*-===//
//
// Compiles each comprehension body once into a list of closures over a
// flat frame of slots (one per scalar SSA value and per iteration index);
// reads become strided loads, arith and math ops float64 arithmetic,
// monoids their lift, combine and finalise (Compiler.h).
//
//===----------------------------------------------------------------------===//

#include "Compiler.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::interp;

/// Memo tables of nested comprehensions are bounded; past this many entries
/// a table starts over.
static constexpr size_t kMaxMemoEntries = size_t(1) << 20;

Compiler::MemoKey Compiler::getMemoKey(ComprehensionOp c) {
  llvm::SetVector<Value> indices, scalars;
  c.getBodyBlock().walk([&](Operation *op) {
    for (Value v : op->getOperands()) {
      if (c->isAncestor(v.getParentRegion()->getParentOp()))
        continue; // Defined inside c.
      if (getOwningComprehension(v))
        indices.insert(v);
      else if (!isa<RankedTensorType>(v.getType()) && !getFunctionScalar(v))
        scalars.insert(v); // A scalar of the enclosing body.
    }
  });
  MemoKey key;
  for (Value v : indices)
    key.indices.push_back(slotOf(v));
  for (Value v : scalars)
    key.scalars.push_back(slotOf(v));
  return key;
}

std::optional<double> Compiler::getFunctionScalar(Value v) {
  if (std::optional<double> c = getScalarConstant(v))
    return c;
  if (!v.getType().isIndex() || getOwningComprehension(v))
    return std::nullopt;
  FailureOr<Size> size = getSizeOf(v);
  if (failed(size))
    return std::nullopt;
  return static_cast<double>(size->evaluate(sizes));
}

SmallVector<int64_t> Compiler::getExtents(ComprehensionOp op) {
  SmallVector<int64_t> extents;
  for (unsigned pos = 0; pos < op.getNumIndices(); ++pos)
    extents.push_back(op.isSymbolicExtent(pos)
                          ? getSizeOf(op.getDynamicExtent(pos))->evaluate(sizes)
                          : op.getExtent(pos));
  return extents;
}

LogicalResult Compiler::ensureAvailable(Operation *user, Value v,
                                        unsigned operandNo,
                                        std::vector<Instr> &out) {
  if (slots.count(v) || isa<RankedTensorType>(v.getType()))
    return success();
  std::optional<double> c = getFunctionScalar(v);
  if (!c)
    return user->emitError() << "tang-run: operand #" << operandNo
                             << " is not computed in this comprehension body";
  Slot d = slotOf(v);
  out.push_back([d, c](double *f) { f[d] = *c; });
  return success();
}

LogicalResult Compiler::compileBlock(Block &block, std::vector<Instr> &out) {
  for (Operation &op : block.without_terminator()) {
    if (failed(compileOp(&op, out)))
      return failure();
    if (precision)
      appendRoundings(&op, out);
    if (perturbation)
      appendPerturbations(&op, out);
  }
  return success();
}

double mlir::tang::interp::getUnitRoundoff(Type t) {
  if (t.isF64())
    return 0x1.0p-53;
  if (t.isF32())
    return 0x1.0p-24;
  if (t.isF16())
    return 0x1.0p-11;
  if (t.isBF16())
    return 0x1.0p-8;
  return 0;
}

void Compiler::appendPerturbations(Operation *op, std::vector<Instr> &out) {
  // Exact operations (remainder, min/max, negation, selects, reads) round
  // nothing; conversions from integers may.
  bool rounds =
      isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp>(op) ||
      (isa<math::MathDialect>(op->getDialect()) &&
       !isa<math::AbsFOp, math::CopySignOp, math::FloorOp, math::CeilOp,
            math::RoundOp, math::RoundEvenOp, math::TruncOp>(op));
  if (!rounds)
    return;
  for (Value r : op->getResults()) {
    Type t = r.getType();
    if (!isa<FloatType>(t))
      continue;
    // Kernels compute in f32 (f64 in f64), f16 and bf16 too: a truncf to
    // them rounds only where it is stored.
    double u = t.isF64() ? getUnitRoundoff(t)
                         : getUnitRoundoff(Float32Type::get(t.getContext()));
    Slot d = slotOf(r);
    out.push_back(
        [d, u, p = perturbation](double *f) { f[d] = p->apply(f[d], u); });
  }
}

double mlir::tang::interp::roundValue(double v, Rounding r) {
  if (r == Rounding::None || std::isnan(v))
    return v;
  float f = static_cast<float>(v);
  if (r == Rounding::F32 || std::isinf(f))
    return f;
  if (r == Rounding::F16)
    return static_cast<double>(static_cast<_Float16>(f));
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (r == Rounding::BF16) {
    bits += 0x7FFF + ((bits >> 16) & 1);
    bits &= 0xFFFF0000u;
  } else { // TF32: 10 mantissa bits, ties away from zero.
    bits += 0x1000;
    bits &= 0xFFFFE000u;
  }
  std::memcpy(&f, &bits, 4);
  return f;
}

Rounding mlir::tang::interp::getRounding(Type t) {
  if (t.isF32())
    return Rounding::F32;
  if (t.isBF16())
    return Rounding::BF16;
  if (t.isF16())
    return Rounding::F16;
  return Rounding::None;
}

void Compiler::appendRoundings(Operation *op, std::vector<Instr> &out) {
  for (Value r : op->getResults()) {
    Type t = r.getType();
    if (!isa<FloatType>(t) || t.isF64())
      continue;
    Rounding how = Rounding::F32;
    if (isa<ReadOp, GatherOp>(op))
      how = t.isF32() && precision->tf32Operands ? Rounding::TF32
                                                 : Rounding::None;
    else if (isa<arith::TruncFOp>(op))
      // To f32 from f64; to f16/bf16 nothing: kernels compute those in
      // f32 (BodyEmitter), and round only where they store.
      how = t.isF32() ? Rounding::F32 : Rounding::None;
    else if (isa<arith::ExtFOp, ComprehensionOp>(op))
      how = Rounding::None;
    if (how == Rounding::None)
      continue;
    Slot d = slotOf(r);
    out.push_back([d, how](double *f) { f[d] = roundValue(f[d], how); });
  }
}

FailureOr<std::shared_ptr<Plan>>
Compiler::compileYieldingBody(Operation *op, unsigned numParallel,
                              ArrayRef<int64_t> extents, Block &body,
                              Attribute monoid, unsigned numResults) {
  auto plan = std::make_shared<Plan>();
  plan->numParallel = numParallel;
  for (auto [i, e] : llvm::enumerate(extents)) {
    plan->indexSlots.push_back(slotOf(body.getArgument(i)));
    plan->extents.push_back(e);
  }
  if (failed(compileBlock(body, plan->body)))
    return failure();
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    // A yielded constant may have been hoisted out of the body.
    if (failed(ensureAvailable(yield, v, i, plan->body)))
      return failure();
    plan->yieldSlots.push_back(slotOf(v));
  }
  plan->numResults = numResults;
  if (monoid) {
    FailureOr<MonoidEval> m =
        compileMonoid(op, monoid, yield.getValues().getTypes());
    if (failed(m))
      return failure();
    plan->monoid = std::move(*m);
    // Kernels accumulate in f32 (f64 values in f64).
    if (precision)
      plan->carrierRounding = llvm::all_of(yield.getValues().getTypes(),
                                           [](Type t) { return !t.isF64(); })
                                  ? Rounding::F32
                                  : Rounding::None;
  }
  return plan;
}

FailureOr<std::shared_ptr<Plan>>
Compiler::compileComprehension(ComprehensionOp op) {
  return compileYieldingBody(op, op.getNumParallel(), getExtents(op),
                             op.getBodyBlock(), op.getMonoidAttr(),
                             op.getNumResults());
}

FailureOr<std::shared_ptr<Plan>> Compiler::compileScan(ScanOp op) {
  return compileYieldingBody(op, op.getNumParallel(), op.getExtents(),
                             op.getBodyBlock(), op.getMonoidAttr(),
                             op.getNumResults());
}

FailureOr<std::shared_ptr<Plan>>
Compiler::compileScatter(ScatterOp op, SmallVectorImpl<Slot> &coordinateSlots,
                         std::optional<MonoidEval> &combine) {
  auto plan = std::make_shared<Plan>();
  plan->numParallel = op.getNumIndices();
  for (unsigned i = 0, e = op.getNumIndices(); i < e; ++i) {
    plan->indexSlots.push_back(slotOf(op.getIndex(i)));
    plan->extents.push_back(op.getExtent(i));
  }
  if (failed(compileBlock(op.getBodyBlock(), plan->body)))
    return failure();
  PutOp put = op.getPut();
  for (auto [i, v] : llvm::enumerate(put->getOperands()))
    if (failed(ensureAvailable(put, v, i, plan->body)))
      return failure();
  plan->yieldSlots.push_back(slotOf(put.getValue()));
  plan->numResults = 1;
  for (Value v : put.getMapOperands())
    coordinateSlots.push_back(slotOf(v));
  if (Attribute monoid = op.getMonoidAttr()) {
    FailureOr<MonoidEval> m =
        compileMonoid(op, monoid, TypeRange{op.getType().getElementType()});
    if (failed(m))
      return failure();
    combine = std::move(*m);
  }
  return plan;
}

double mlir::tang::interp::attrToDouble(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  auto i = cast<IntegerAttr>(a);
  return static_cast<double>(i.getType().isInteger(1)
                                 ? int64_t(i.getValue().getZExtValue())
                                 : i.getValue().getSExtValue());
}

FailureOr<BlockFunction>
Compiler::compileFunction(Block &block, unsigned split, ValueRange results,
                          std::shared_ptr<void> owner) {
  // The block runs on a frame of its own.
  auto sub = std::make_shared<Compiler>(tensors, err);
  sub->setPerturbation(perturbation);
  auto argSlots = std::make_shared<SmallVector<Slot>>();
  for (BlockArgument a : block.getArguments())
    argSlots->push_back(sub->slotOf(a));
  auto body = std::make_shared<std::vector<Instr>>();
  if (failed(sub->compileBlock(block, *body)))
    return failure();
  auto resultSlots = std::make_shared<SmallVector<Slot>>();
  for (Value v : results)
    resultSlots->push_back(sub->slotOf(v));
  auto frame = std::make_shared<std::vector<double>>(sub->getNumSlots());
  // Capturing `sub` keeps the compiler that owns the slots alive as long as
  // the closure, `owner` the IR.
  return BlockFunction([=](const double *a, const double *b, double *out) {
    (void)sub;
    (void)owner;
    double *f = frame->data();
    for (auto [i, slot] : llvm::enumerate(*argSlots))
      f[slot] = i < split ? a[i] : b[i - split];
    for (const Instr &i : *body)
      i(f);
    for (auto [i, slot] : llvm::enumerate(*resultSlots))
      out[i] = f[slot];
  });
}

FailureOr<MonoidEval>
mlir::tang::interp::compileBuiltinMonoid(MonoidKind kind, TypeRange yieldTypes,
                                         Compiler &compiler) {
  MLIRContext *ctx = yieldTypes.front().getContext();
  // A module that uses no monoid (checked for the builtins' laws) may not
  // have loaded the dialects the definitions are written in.
  ctx->getOrLoadDialect<arith::ArithDialect>();
  ctx->getOrLoadDialect<math::MathDialect>();
  Location loc = UnknownLoc::get(ctx);
  MonoidEval m;
  m.carrierTypes = getBuiltinCarrierTypes(kind, yieldTypes);
  m.carrierSize = m.carrierTypes.size();
  for (TypedAttr a : getBuiltinIdentity(kind, m.carrierTypes))
    m.identity.push_back(attrToDouble(a));

  // One region holds the blocks of the four functions; the closures keep it.
  auto region = std::make_shared<Region>();
  SmallVector<Type> twice(m.carrierTypes);
  twice.append(m.carrierTypes.begin(), m.carrierTypes.end());
  SmallVector<Type> carrierThenYields(m.carrierTypes);
  carrierThenYields.append(yieldTypes.begin(), yieldTypes.end());
  auto makeBlock = [&](TypeRange args) {
    Block *block = new Block();
    region->push_back(block);
    for (Type t : args)
      block->addArgument(t, loc);
    return block;
  };
  OpBuilder b(ctx);
  Block *combine = makeBlock(twice);
  b.setInsertionPointToEnd(combine);
  SmallVector<Value> combined = buildBuiltinCombine(
      b, loc, kind, combine->getArguments().take_front(m.carrierSize),
      combine->getArguments().drop_front(m.carrierSize));
  Block *accumulate = makeBlock(carrierThenYields);
  b.setInsertionPointToEnd(accumulate);
  SmallVector<Value> accumulated = buildBuiltinAccumulate(
      b, loc, kind, m.carrierTypes,
      accumulate->getArguments().take_front(m.carrierSize),
      accumulate->getArguments().drop_front(m.carrierSize));
  Block *lift = makeBlock(yieldTypes);
  b.setInsertionPointToEnd(lift);
  SmallVector<Value> lifted =
      buildBuiltinLift(b, loc, kind, m.carrierTypes, lift->getArguments());
  Block *finalize = makeBlock(m.carrierTypes);
  b.setInsertionPointToEnd(finalize);
  SmallVector<Value> finalized =
      buildBuiltinFinalize(b, loc, kind, finalize->getArguments());

  unsigned n = m.carrierSize;
  FailureOr<BlockFunction> fc =
      compiler.compileFunction(*combine, n, combined, region);
  FailureOr<BlockFunction> fa =
      compiler.compileFunction(*accumulate, n, accumulated, region);
  FailureOr<BlockFunction> fl =
      compiler.compileFunction(*lift, yieldTypes.size(), lifted, region);
  FailureOr<BlockFunction> ff =
      compiler.compileFunction(*finalize, n, finalized, region);
  if (failed(fc) || failed(fa) || failed(fl) || failed(ff))
    return failure();
  m.combine = *fc;
  m.finalize = [f = *ff](const double *acc, double *results) {
    f(acc, nullptr, results);
  };
  // The softmax monoids lift their yields, and accumulate an element with
  // one exponential instead of a general combine's two.
  if (kind == MonoidKind::SoftmaxNorm || kind == MonoidKind::OnlineSoftmax) {
    m.lift = [f = *fl](const double *yields, double *carrier) {
      f(yields, nullptr, carrier);
    };
    m.accumulateElement = *fa;
  }
  return m;
}

FailureOr<MonoidEval> Compiler::compileMonoid(Operation *op, Attribute monoid,
                                              TypeRange yieldTypes) {
  if (auto builtin = dyn_cast<MonoidKindAttr>(monoid))
    return compileBuiltinMonoid(builtin.getValue(), yieldTypes, *this);
  auto sym = cast<FlatSymbolRefAttr>(monoid);
  auto user = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(op, sym);
  if (!user)
    return op->emitError() << "tang-run: cannot find monoid " << sym;
  return compileUserMonoid(user);
}

FailureOr<MonoidEval> Compiler::compileUserMonoid(MonoidOp op) {
  MonoidEval m;
  m.carrierTypes = op.getCarrierTypes();
  for (Attribute a : op.getIdentity())
    m.identity.push_back(attrToDouble(a));
  unsigned n = m.identity.size();
  m.carrierSize = n;
  // Lift is the identity map.
  Block &b = op.getCombine().front();
  FailureOr<BlockFunction> combine = compileFunction(
      b, n, cast<YieldOp>(b.getTerminator()).getValues(), nullptr);
  if (failed(combine))
    return failure();
  m.combine = *combine;
  m.finalize = [n](const double *a, double *res) { std::copy(a, a + n, res); };
  return m;
}

FailureOr<std::shared_ptr<Tensor>> Compiler::lookupTensor(Operation *reader,
                                                          Value tensor) {
  auto it = tensors.find(tensor);
  if (it == tensors.end())
    return reader->emitError() << "tang-run: the tensor read here is not a "
                                  "function-level value";
  return it->second;
}

LogicalResult Compiler::compileRead(ReadOp op, std::vector<Instr> &out) {
  FailureOr<std::shared_ptr<Tensor>> found = lookupTensor(op, op.getTensor());
  if (failed(found))
    return failure();
  std::shared_ptr<Tensor> t = *found;
  Slot dst = slotOf(op.getResult());
  SmallVector<Slot> idx =
      llvm::map_to_vector(op.getIndices(), [&](Value v) { return slotOf(v); });
  AffineMap map = op.getMap();
  SmallVector<int64_t> strides = t->getStrides();
  int64_t numElements = t->getNumElements();

  // Fast path: the flat offset is linear in the indices.
  LinearForm flat;
  flat.coeffs.assign(idx.size(), 0);
  bool linear = true;
  for (auto [r, e] : llvm::enumerate(map.getResults())) {
    std::optional<LinearForm> l = getLinearForm(e, idx.size());
    if (!l) {
      linear = false;
      break;
    }
    for (unsigned d = 0; d < idx.size(); ++d)
      flat.coeffs[d] += l->coeffs[d] * strides[r];
    flat.constant += l->constant * strides[r];
  }
  ErrorState *e = &err;
  Operation *at = op;
  // A padded read: coordinates outside the tensor read the fill.
  std::optional<double> fill;
  if (TypedAttr a = op.getFillAttr())
    fill = attrToDouble(a);
  if (linear && !fill) {
    out.push_back([t, dst, idx, flat, numElements, e, at](double *f) {
      int64_t off = flat.constant;
      for (unsigned d = 0; d < idx.size(); ++d)
        off += flat.coeffs[d] * static_cast<int64_t>(f[idx[d]]);
      if (off < 0 || off >= numElements) {
        e->raise(at, "read out of bounds");
        f[dst] = NAN;
        return;
      }
      f[dst] = t->data[off];
    });
    return success();
  }
  out.push_back([t, dst, idx, map, strides, fill, e, at](double *f) {
    SmallVector<int64_t, 8> dims;
    for (Slot s : idx)
      dims.push_back(static_cast<int64_t>(f[s]));
    int64_t off = 0;
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      int64_t c = evaluateAffine(expr, dims);
      if ((c < 0 || c >= t->shape[r]) && fill) {
        f[dst] = *fill;
        return;
      }
      if (c < 0 || c >= t->shape[r]) {
        e->raise(at, "read out of bounds");
        f[dst] = NAN;
        return;
      }
      off += c * strides[r];
    }
    f[dst] = t->data[off];
  });
  return success();
}

LogicalResult Compiler::compileGather(GatherOp op, std::vector<Instr> &out) {
  FailureOr<std::shared_ptr<Tensor>> found = lookupTensor(op, op.getTensor());
  if (failed(found))
    return failure();
  std::shared_ptr<Tensor> t = *found;
  Slot dst = slotOf(op.getResult());
  SmallVector<Slot> operands = llvm::map_to_vector(
      op.getMapOperands(), [&](Value v) { return slotOf(v); });
  // The data values (symbols) become dimensions after the indices.
  AffineMap map = op.getMap();
  unsigned numDims = map.getNumDims(), numSymbols = map.getNumSymbols();
  SmallVector<AffineExpr> dims, symbols;
  for (unsigned d = 0; d < numDims; ++d)
    dims.push_back(getAffineDimExpr(d, op.getContext()));
  for (unsigned s = 0; s < numSymbols; ++s)
    symbols.push_back(getAffineDimExpr(numDims + s, op.getContext()));
  map = map.replaceDimsAndSymbols(dims, symbols, numDims + numSymbols, 0);
  SmallVector<int64_t> strides = t->getStrides();
  OutOfRange policy = op.getPolicy();
  ErrorState *e = &err;
  Operation *at = op;
  out.push_back([t, dst, operands, map, strides, policy, e, at](double *f) {
    SmallVector<int64_t, 8> values;
    for (Slot s : operands)
      values.push_back(static_cast<int64_t>(f[s]));
    int64_t off = 0;
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      int64_t c = evaluateAffine(expr, values), n = t->shape[r];
      if (c < 0 || c >= n) {
        if (policy == OutOfRange::Zero) {
          f[dst] = 0;
          return;
        }
        if (policy == OutOfRange::Trap) {
          e->raise(at, (Twine("gather coordinate #") + Twine(r) + " is " +
                        Twine(c) + ", outside [0, " + Twine(n) +
                        ") (policy trap; clamp or zero on request)")
                           .str());
          f[dst] = NAN;
          return;
        }
        c = std::clamp<int64_t>(c, 0, n - 1);
      }
      off += c * strides[r];
    }
    f[dst] = t->data[off];
  });
  return success();
}

/// Long by design: the interpreter's table of op semantics, one case per
/// arith op (and tang's reads, indices and nested comprehensions; math ops
/// in CompilerMath.cpp), kept in one switch so that what tang-run means by
/// each op is in one place.
LogicalResult Compiler::compileOp(Operation *op, std::vector<Instr> &out) {
  ErrorState *e = &err;
  // Every scalar operand is computed earlier in the compiled bodies, or is a
  // scalar constant captured from the function level.
  for (OpOperand &use : op->getOpOperands())
    if (failed(ensureAvailable(op, use.get(), use.getOperandNumber(), out)))
      return failure();
  auto unary = [&](Value in, Value res, double (*fn)(double)) {
    return emitUnary(in, res, fn, out);
  };
  auto binary = [&](Operation *o, double (*fn)(double, double)) {
    return emitBinary(o, fn, out);
  };
  /// Integer binary op on two's-complement bits, wrapped to the width.
  auto intBinary = [&](Operation *o,
                       std::function<std::optional<uint64_t>(
                           uint64_t, uint64_t, int64_t, int64_t, unsigned)>
                           fn) {
    Slot a = slotOf(o->getOperand(0)), b = slotOf(o->getOperand(1)),
         d = slotOf(o->getResult(0));
    unsigned w = getBitWidth(o->getResult(0).getType());
    out.push_back([a, b, d, w, fn, e, o](double *f) {
      std::optional<uint64_t> r = fn(toUnsigned(f[a], w), toUnsigned(f[b], w),
                                     toSigned(f[a], w), toSigned(f[b], w), w);
      if (!r) {
        e->raise(o, "integer division by zero");
        f[d] = 0;
        return;
      }
      f[d] = fromBits(*r, w);
    });
    return success();
  };
  using U = uint64_t;
  using S = int64_t;
  using R = std::optional<uint64_t>;

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // tang
      .Case<ReadOp>([&](ReadOp r) { return compileRead(r, out); })
      .Case<GatherOp>([&](GatherOp g) { return compileGather(g, out); })
      .Case<IndexOp>([&](IndexOp i) -> LogicalResult {
        SmallVector<Slot> idx;
        for (Value v : i.getIndices())
          idx.push_back(slotOf(v));
        AffineExpr expr = i.getMap().getResult(0);
        Slot d = slotOf(i.getResult());
        Type t = i.getResult().getType();
        unsigned w = isa<FloatType>(t) ? 0 : getBitWidth(t);
        out.push_back([idx, expr, d, w](double *f) {
          SmallVector<int64_t, 4> dims;
          for (Slot s : idx)
            dims.push_back(static_cast<int64_t>(f[s]));
          int64_t v = evaluateAffine(expr, dims);
          f[d] = w ? fromBits(static_cast<uint64_t>(v), w)
                   : static_cast<double>(v);
        });
        return success();
      })
      .Case<ComprehensionOp>([&](ComprehensionOp c) -> LogicalResult {
        FailureOr<std::shared_ptr<Plan>> plan = compileComprehension(c);
        if (failed(plan))
          return failure();
        // The precision emulator: a row kernel's threads stride the
        // reductions nested directly in its comprehension.
        if (precision && c.getNumReduced() &&
            !c->getParentOfType<ComprehensionOp>()
                 ->getParentOfType<ComprehensionOp>()) {
          (*plan)->partials = precision->nestedPartials;
          (*plan)->vector = precision->nestedVector;
        }
        SmallVector<Slot> res;
        for (Value v : c.getResults())
          res.push_back(slotOf(v));
        std::shared_ptr<Plan> p = *plan;
        // A nested comprehension is a pure function of the enclosing
        // indices and scalars it reads (tensors and constants aside): one
        // that reads only indices is evaluated once per distinct index
        // tuple, as a schedule would; one that also reads scalars of the
        // enclosing body (a variance after its mean) is reused while they
        // are unchanged from the previous point (a row's points run in
        // order, so once per row).
        MemoKey memoKey = getMemoKey(c);
        if (!memoKey.scalars.empty()) {
          SmallVector<Slot> keys(memoKey.indices);
          llvm::append_range(keys, memoKey.scalars);
          auto last = std::make_shared<
              std::pair<std::vector<uint64_t>, SmallVector<double, 4>>>();
          out.push_back([p, res, keys, last](double *f) {
            bool hit = !last->first.empty();
            for (auto [k, s] : llvm::enumerate(keys)) {
              uint64_t bits = llvm::bit_cast<uint64_t>(f[s]);
              if (hit && last->first[k] == bits)
                continue;
              if (hit) {
                hit = false;
                last->first.resize(k);
              }
              last->first.push_back(bits);
            }
            if (!hit) {
              last->second.assign(res.size(), 0.0);
              p->evalPoint(f, last->second.data());
            }
            for (auto [k, s] : llvm::enumerate(res))
              f[s] = last->second[k];
          });
          return success();
        }
        auto memo = std::make_shared<
            std::map<std::vector<int64_t>, SmallVector<double, 4>>>();
        out.push_back([p, res, keys = memoKey.indices, memo](double *f) {
          std::vector<int64_t> key;
          key.reserve(keys.size());
          for (Slot s : keys)
            key.push_back(static_cast<int64_t>(f[s]));
          auto it = memo->find(key);
          if (it == memo->end()) {
            SmallVector<double, 4> vals(res.size());
            p->evalPoint(f, vals.data());
            if (memo->size() >= kMaxMemoEntries)
              memo->clear();
            it = memo->emplace(std::move(key), std::move(vals)).first;
          }
          for (auto [k, s] : llvm::enumerate(res))
            f[s] = it->second[k];
        });
        return success();
      })
      // arith: constants and casts
      .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
        std::optional<double> v = getScalarConstant(c.getResult());
        if (!v)
          return c.emitError() << "tang-run: unsupported constant in a "
                                  "comprehension body (expected a scalar)";
        Slot d = slotOf(c.getResult());
        out.push_back([d, v](double *f) { f[d] = *v; });
        return success();
      })
      .Case<arith::ExtFOp, arith::TruncFOp>([&](Operation *o) {
        return unary(o->getOperand(0), o->getResult(0),
                     [](double x) { return x; });
      })
      .Case<arith::SIToFPOp>([&](arith::SIToFPOp o) {
        Slot a = slotOf(o.getIn()), d = slotOf(o.getResult());
        unsigned w = getBitWidth(o.getIn().getType());
        out.push_back([a, d, w](double *f) {
          f[d] = static_cast<double>(toSigned(f[a], w));
        });
        return success();
      })
      .Case<arith::UIToFPOp>([&](arith::UIToFPOp o) {
        Slot a = slotOf(o.getIn()), d = slotOf(o.getResult());
        unsigned w = getBitWidth(o.getIn().getType());
        out.push_back([a, d, w](double *f) {
          f[d] = static_cast<double>(toUnsigned(f[a], w));
        });
        return success();
      })
      .Case<arith::FPToSIOp, arith::FPToUIOp>([&](Operation *o) {
        Slot a = slotOf(o->getOperand(0)), d = slotOf(o->getResult(0));
        unsigned w = getBitWidth(o->getResult(0).getType());
        out.push_back([a, d, w](double *f) {
          f[d] = fromBits(
              static_cast<uint64_t>(static_cast<int64_t>(std::trunc(f[a]))), w);
        });
        return success();
      })
      .Case<arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp>(
          [&](Operation *o) {
            Slot a = slotOf(o->getOperand(0)), d = slotOf(o->getResult(0));
            unsigned wi = getBitWidth(o->getOperand(0).getType());
            unsigned wo = getBitWidth(o->getResult(0).getType());
            out.push_back([a, d, wi, wo](double *f) {
              f[d] = fromBits(static_cast<uint64_t>(toSigned(f[a], wi)), wo);
            });
            return success();
          })
      .Case<arith::ExtUIOp, arith::IndexCastUIOp>([&](Operation *o) {
        Slot a = slotOf(o->getOperand(0)), d = slotOf(o->getResult(0));
        unsigned wi = getBitWidth(o->getOperand(0).getType());
        unsigned wo = getBitWidth(o->getResult(0).getType());
        out.push_back([a, d, wi, wo](double *f) {
          f[d] = fromBits(toUnsigned(f[a], wi), wo);
        });
        return success();
      })
      // arith: float arithmetic
      .Case<arith::AddFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return a + b; });
      })
      .Case<arith::SubFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return a - b; });
      })
      .Case<arith::MulFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return a * b; });
      })
      .Case<arith::DivFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return a / b; });
      })
      .Case<arith::RemFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::fmod(a, b); });
      })
      .Case<arith::MaximumFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) {
          return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
        });
      })
      .Case<arith::MinimumFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) {
          return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
        });
      })
      .Case<arith::MaxNumFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::fmax(a, b); });
      })
      .Case<arith::MinNumFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::fmin(a, b); });
      })
      .Case<arith::NegFOp>([&](arith::NegFOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return -x; });
      })
      .Case<arith::CmpFOp>([&](arith::CmpFOp o) {
        Slot a = slotOf(o.getLhs()), b = slotOf(o.getRhs()),
             d = slotOf(o.getResult());
        arith::CmpFPredicate p = o.getPredicate();
        out.push_back([a, b, d, p](double *f) {
          double x = f[a], y = f[b];
          bool unordered = std::isnan(x) || std::isnan(y);
          bool r;
          using P = arith::CmpFPredicate;
          switch (p) {
          case P::AlwaysFalse:
            r = false;
            break;
          case P::AlwaysTrue:
            r = true;
            break;
          case P::OEQ:
            r = !unordered && x == y;
            break;
          case P::OGT:
            r = !unordered && x > y;
            break;
          case P::OGE:
            r = !unordered && x >= y;
            break;
          case P::OLT:
            r = !unordered && x < y;
            break;
          case P::OLE:
            r = !unordered && x <= y;
            break;
          case P::ONE:
            r = !unordered && x != y;
            break;
          case P::ORD:
            r = !unordered;
            break;
          case P::UEQ:
            r = unordered || x == y;
            break;
          case P::UGT:
            r = unordered || x > y;
            break;
          case P::UGE:
            r = unordered || x >= y;
            break;
          case P::ULT:
            r = unordered || x < y;
            break;
          case P::ULE:
            r = unordered || x <= y;
            break;
          case P::UNE:
            r = unordered || x != y;
            break;
          case P::UNO:
            r = unordered;
            break;
          }
          f[d] = r;
        });
        return success();
      })
      .Case<arith::SelectOp>([&](arith::SelectOp o) -> LogicalResult {
        if (!o.getCondition().getType().isInteger(1))
          return o.emitError() << "tang-run: select needs a scalar i1 "
                                  "condition";
        Slot c = slotOf(o.getCondition()), a = slotOf(o.getTrueValue()),
             b = slotOf(o.getFalseValue()), d = slotOf(o.getResult());
        out.push_back(
            [c, a, b, d](double *f) { f[d] = f[c] != 0 ? f[a] : f[b]; });
        return success();
      })
      // arith: integer arithmetic
      .Case<arith::AddIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a + b; });
      })
      .Case<arith::SubIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a - b; });
      })
      .Case<arith::MulIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a * b; });
      })
      .Case<arith::AndIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a & b; });
      })
      .Case<arith::OrIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a | b; });
      })
      .Case<arith::XOrIOp>([&](Operation *o) {
        return intBinary(o,
                         [](U a, U b, S, S, unsigned) -> R { return a ^ b; });
      })
      .Case<arith::DivSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          if (b == -1) // INT_MIN / -1 wraps instead of trapping.
            return U(0) - static_cast<U>(a);
          return static_cast<U>(a / b);
        });
      })
      .Case<arith::RemSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          if (b == -1)
            return U(0);
          return static_cast<U>(a % b);
        });
      })
      .Case<arith::DivUIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          return a / b;
        });
      })
      .Case<arith::RemUIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          return a % b;
        });
      })
      .Case<arith::FloorDivSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          if (b == -1)
            return U(0) - static_cast<U>(a);
          return static_cast<U>(floorDiv(a, b));
        });
      })
      .Case<arith::CeilDivSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          if (b == -1)
            return U(0) - static_cast<U>(a);
          return static_cast<U>(-floorDiv(-a, b));
        });
      })
      .Case<arith::MaxSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          return static_cast<U>(std::max(a, b));
        });
      })
      .Case<arith::MinSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          return static_cast<U>(std::min(a, b));
        });
      })
      .Case<arith::MaxUIOp>([&](Operation *o) {
        return intBinary(
            o, [](U a, U b, S, S, unsigned) -> R { return std::max(a, b); });
      })
      .Case<arith::MinUIOp>([&](Operation *o) {
        return intBinary(
            o, [](U a, U b, S, S, unsigned) -> R { return std::min(a, b); });
      })
      .Case<arith::ShLIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned w) -> R {
          return b >= w ? 0 : a << b;
        });
      })
      .Case<arith::ShRUIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned w) -> R {
          return b >= w ? 0 : a >> b;
        });
      })
      .Case<arith::ShRSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U b, S a, S, unsigned w) -> R {
          return static_cast<U>(b >= w ? (a < 0 ? -1 : 0) : a >> b);
        });
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp o) {
        Slot a = slotOf(o.getLhs()), b = slotOf(o.getRhs()),
             d = slotOf(o.getResult());
        unsigned w = getBitWidth(o.getLhs().getType());
        arith::CmpIPredicate p = o.getPredicate();
        out.push_back([a, b, d, w, p](double *f) {
          S sa = toSigned(f[a], w), sb = toSigned(f[b], w);
          U ua = toUnsigned(f[a], w), ub = toUnsigned(f[b], w);
          bool r;
          using P = arith::CmpIPredicate;
          switch (p) {
          case P::eq:
            r = ua == ub;
            break;
          case P::ne:
            r = ua != ub;
            break;
          case P::slt:
            r = sa < sb;
            break;
          case P::sle:
            r = sa <= sb;
            break;
          case P::sgt:
            r = sa > sb;
            break;
          case P::sge:
            r = sa >= sb;
            break;
          case P::ult:
            r = ua < ub;
            break;
          case P::ule:
            r = ua <= ub;
            break;
          case P::ugt:
            r = ua > ub;
            break;
          case P::uge:
            r = ua >= ub;
            break;
          }
          f[d] = r;
        });
        return success();
      })
      // math ops (CompilerMath.cpp), then the error for what is neither
      .Default([&](Operation *o) { return compileMathOp(o, out); });
}
