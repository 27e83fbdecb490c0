//===- BodyEmitter.cpp - scalar code for comprehension bodies ---*- C++ -*-===//

#include "BodyEmitter.h"

#include "Tang/Dialect/Tang/IR/TangMonoids.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;

Type mlir::tang::getComputeType(Type t) {
  if (t.isF16() || t.isBF16())
    return Float32Type::get(t.getContext());
  return t;
}

Value mlir::tang::emitNvvmExp2(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
      .getResult(0);
}

Value mlir::tang::emitNvvmExp(OpBuilder &b, Location loc, Value x) {
  constexpr double log2e = 1.4426950408889634;
  Value c = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(log2e));
  return emitNvvmExp2(b, loc, arith::MulFOp::create(b, loc, x, c));
}

/// Adds `flags` to `op`'s fastmath flags.
static void addFastMath(Operation *op, arith::FastMathFlags flags) {
  auto name = StringAttr::get(op->getContext(), "fastmath");
  if (!llvm::is_contained(op->getName().getAttributeNames(), name))
    return;
  if (auto old = op->getAttrOfType<arith::FastMathFlagsAttr>(name))
    flags = flags | old.getValue();
  op->setAttr(name, arith::FastMathFlagsAttr::get(op->getContext(), flags));
}

void mlir::tang::allowApproximation(Operation *op) {
  // Products and sums may contract into fused multiply-adds (one rounding
  // instead of two, as nvcc's default); math functions and divisions may
  // use their approximations.
  allowContraction(op);
  if (isa<math::MathDialect>(op->getDialect()) || isa<arith::DivFOp>(op))
    addFastMath(op, arith::FastMathFlags::afn);
}

void mlir::tang::allowContraction(Operation *op) {
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(op))
    addFastMath(op, arith::FastMathFlags::contract);
}

Value mlir::tang::emitMultiplyAdd(OpBuilder &b, Location loc, Value acc,
                                  Value x, Value y) {
  auto product = arith::MulFOp::create(b, loc, x, y);
  auto sum = arith::AddFOp::create(b, loc, acc, product);
  allowContraction(product);
  allowContraction(sum);
  return sum.getResult();
}

//===----------------------------------------------------------------------===//
// MonoidCodegen
//===----------------------------------------------------------------------===//

FailureOr<MonoidCodegen> MonoidCodegen::get(ComprehensionOp op) {
  return get(op, op.getMonoidAttr(), op.getYield().getValues().getTypes());
}

FailureOr<MonoidCodegen> MonoidCodegen::get(Operation *op, Attribute monoid,
                                            TypeRange yieldTypes) {
  MonoidCodegen m;
  SmallVector<Type> yields = llvm::map_to_vector(yieldTypes, getComputeType);
  if (auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(monoid)) {
    m.user = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(op, sym);
    if (!m.user)
      return op->emitOpError() << "monoid " << sym << " not found";
    m.carrierTypes =
        llvm::map_to_vector(m.user.getCarrierTypes(), getComputeType);
    return m;
  }
  if (auto builtin = dyn_cast_or_null<MonoidKindAttr>(monoid))
    m.kind = builtin.getValue();
  if (!m.kind)
    return op->emitOpError() << "has no monoid";
  if (*m.kind == MonoidKind::OnlineSoftmax && yields[0] != yields[1])
    return op->emitOpError()
           << "the kernel form needs online_softmax scores and values of "
              "one compute type, got "
           << yields[0] << " and " << yields[1];
  m.carrierTypes = getBuiltinCarrierTypes(*m.kind, yields);
  return m;
}

static Value constantLike(OpBuilder &b, Location loc, Type t, double f,
                          int64_t i) {
  if (auto ft = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(b, loc, ft, b.getFloatAttr(ft, f));
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, i));
}

SmallVector<Value> MonoidCodegen::identity(OpBuilder &b, Location loc) const {
  SmallVector<Value> out;
  if (user) {
    for (auto [a, t] : llvm::zip(user.getIdentity(), carrierTypes)) {
      if (auto f = dyn_cast<FloatAttr>(a))
        out.push_back(constantLike(b, loc, t, f.getValueAsDouble(), 0));
      else
        out.push_back(constantLike(
            b, loc, t, 0, cast<IntegerAttr>(a).getValue().getSExtValue()));
    }
    return out;
  }
  for (auto [a, t] :
       llvm::zip(getBuiltinIdentity(*kind, carrierTypes), carrierTypes))
    out.push_back(arith::ConstantOp::create(b, loc, t, a));
  return out;
}

SmallVector<Value> MonoidCodegen::lift(OpBuilder &b, Location loc,
                                       ValueRange yields) const {
  if (user)
    return llvm::to_vector(yields);
  return buildBuiltinLift(b, loc, *kind, carrierTypes, yields);
}

SmallVector<Value> MonoidCodegen::combine(OpBuilder &b, Location loc,
                                          ValueRange x, ValueRange y) const {
  if (user) {
    Block &body = user.getCombine().front();
    IRMapping mapping;
    for (auto [arg, v] :
         llvm::zip(body.getArguments(), llvm::concat<const Value>(x, y)))
      mapping.map(arg, v);
    for (Operation &op : body.without_terminator()) {
      Operation *clone = b.clone(op, mapping);
      for (OpResult r : clone->getResults())
        r.setType(getComputeType(r.getType()));
    }
    return llvm::map_to_vector(body.getTerminator()->getOperands(),
                               [&](Value v) { return mapping.lookup(v); });
  }
  return buildBuiltinCombine(b, loc, *kind, x, y, approximate);
}

SmallVector<Value> MonoidCodegen::accumulate(OpBuilder &b, Location loc,
                                             ValueRange carrier,
                                             ValueRange yields) const {
  if (user)
    return combine(b, loc, carrier, yields);
  return buildBuiltinAccumulate(b, loc, *kind, carrierTypes, carrier, yields,
                                approximate);
}

SmallVector<Value> MonoidCodegen::finalize(OpBuilder &b, Location loc,
                                           ValueRange carrier) const {
  if (user)
    return llvm::to_vector(carrier);
  return buildBuiltinFinalize(b, loc, *kind, carrier, approximate);
}

//===----------------------------------------------------------------------===//
// KernelSizes
//===----------------------------------------------------------------------===//

KernelSizes::KernelSizes(Value buffer, unsigned numSymbols, Block *entry)
    : entry(entry) {
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  Location loc = buffer.getLoc();
  for (unsigned i = 0; i < numSymbols; ++i) {
    Value raw = memref::LoadOp::create(
        b, loc, buffer,
        ValueRange{arith::ConstantIndexOp::create(b, loc, i).getResult()});
    symbols.push_back(
        arith::IndexCastOp::create(b, loc, b.getIndexType(), raw));
  }
}

OpBuilder KernelSizes::getEntryBuilder() {
  if (symbols.empty())
    return OpBuilder::atBlockBegin(entry);
  OpBuilder b(entry->getParentOp()->getContext());
  b.setInsertionPointAfter(symbols.back().getDefiningOp());
  return b;
}

Value KernelSizes::get(OpBuilder &b, Location loc, const Size &s) {
  return buildSize(b, loc, s, symbols);
}

Value mlir::tang::buildSize(OpBuilder &b, Location loc, const Size &s,
                            ArrayRef<Value> symbols) {
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value v = cst(s.constant);
  for (auto [i, c] : llvm::enumerate(s.coeffs)) {
    if (!c)
      continue;
    Value term =
        c == 1 ? symbols[i]
               : arith::MulIOp::create(b, loc, symbols[i], cst(c)).getResult();
    v = arith::AddIOp::create(b, loc, v, term);
  }
  return v;
}

Value KernelSizes::getDim(OpBuilder &b, Location loc, Value memref,
                          unsigned d) {
  auto it = flatShapes.find(memref);
  if (it != flatShapes.end())
    return get(b, loc, it->second[d]);
  return arith::ConstantIndexOp::create(
      b, loc, cast<MemRefType>(memref.getType()).getDimSize(d));
}

SmallVector<Value> KernelSizes::getIndices(OpBuilder &b, Location loc,
                                           Value memref, ValueRange coords) {
  auto it = flatShapes.find(memref);
  if (it == flatShapes.end())
    return llvm::to_vector(coords);
  Value off = coords.empty()
                  ? arith::ConstantIndexOp::create(b, loc, 0).getResult()
                  : coords[0];
  for (unsigned d = 1; d < coords.size(); ++d)
    off = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, off, get(b, loc, it->second[d])),
        coords[d]);
  return {off};
}

//===----------------------------------------------------------------------===//
// BodyEmitter
//===----------------------------------------------------------------------===//

Value BodyEmitter::load(OpBuilder &b, Location loc, Value memref,
                        ValueRange coords) {
  if (sizes)
    return memref::LoadOp::create(b, loc, memref,
                                  sizes->getIndices(b, loc, memref, coords));
  return memref::LoadOp::create(b, loc, memref, coords);
}

Value BodyEmitter::getDim(OpBuilder &b, Location loc, Value memref,
                          unsigned d) {
  if (sizes)
    return sizes->getDim(b, loc, memref, d);
  return arith::ConstantIndexOp::create(
      b, loc, cast<MemRefType>(memref.getType()).getDimSize(d));
}

Value BodyEmitter::getExtent(OpBuilder &b, Location loc, ComprehensionOp op,
                             unsigned pos) {
  if (op.isSymbolicExtent(pos) && sizes)
    return sizes->get(b, loc, *getSizeOf(op.getDynamicExtent(pos)));
  return arith::ConstantIndexOp::create(b, loc, op.getExtent(pos));
}

Value BodyEmitter::emitRead(OpBuilder &b, Location loc, Value memref,
                            AffineMap map, ValueRange indices) {
  std::optional<SmallVector<Value, 8>> coords =
      affine::expandAffineMap(b, loc, map, indices);
  Value v = load(b, loc, memref, *coords);
  Type ct = getComputeType(v.getType());
  if (ct != v.getType())
    v = arith::ExtFOp::create(b, loc, ct, v);
  return v;
}

/// `c` if it lies in [0, extent), else 0 (a safe address); `inside`
/// accumulates (and) whether every coordinate guarded so far lies inside.
static Value guardCoordinate(OpBuilder &b, Location loc, Value c, Value extent,
                             Value &inside) {
  // In range as an unsigned comparison: a negative coordinate is huge.
  Value ok =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c, extent);
  inside = inside ? arith::AndIOp::create(b, loc, inside, ok) : ok;
  return arith::SelectOp::create(b, loc, ok, c,
                                 arith::ConstantIndexOp::create(b, loc, 0));
}

FailureOr<SmallVector<Value>>
BodyEmitter::getGatherCoordinates(OpBuilder &b, GatherOp gather,
                                  IRMapping &mapping, Value &inside) {
  Location loc = gather.getLoc();
  Value memref = tensors.lookupOrNull(gather.getTensor());
  if (!memref)
    return gather.emitOpError()
           << "gathers from a tensor with no buffer in the kernel";
  if (gather.getPolicy() == OutOfRange::Trap)
    return gather.emitOpError()
           << "traps on an out-of-range coordinate that kernels cannot "
              "check (no device error channel): the runtime checks a data "
              "coordinate that is an element of an integer input, as read; "
              "give this one the clamp or zero policy, or run it with "
              "tang-run";
  auto lookup = [&](Value v) { return mapping.lookup(v); };
  SmallVector<Value> dims = llvm::map_to_vector(gather.getIndices(), lookup);
  SmallVector<Value> symbols = llvm::map_to_vector(gather.getValues(), lookup);
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  SmallVector<Value> coords;
  inside = Value();
  for (auto [pos, expr] : llvm::enumerate(gather.getMap().getResults())) {
    Value c = affine::expandAffineExpr(b, loc, expr, dims, symbols);
    bool usesData = false;
    expr.walk([&](AffineExpr e) { usesData |= isa<AffineSymbolExpr>(e); });
    if (usesData && gather.getPolicy() == OutOfRange::Clamp)
      c = arith::MaxSIOp::create(
          b, loc, cst(0),
          arith::MinSIOp::create(
              b, loc, c,
              arith::SubIOp::create(b, loc, getDim(b, loc, memref, pos),
                                    cst(1))));
    else if (usesData)
      c = guardCoordinate(b, loc, c, getDim(b, loc, memref, pos), inside);
    coords.push_back(c);
  }
  return coords;
}

LogicalResult BodyEmitter::emitGather(OpBuilder &b, GatherOp gather,
                                      IRMapping &mapping) {
  Value inside;
  FailureOr<SmallVector<Value>> coords =
      getGatherCoordinates(b, gather, mapping, inside);
  if (failed(coords))
    return failure();
  Value memref = tensors.lookup(gather.getTensor());
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  mapping.map(gather.getResult(),
              emitGuardedLoad(b, gather.getLoc(), memref, *coords, inside,
                              b.getZeroAttr(element)));
  return success();
}

Value BodyEmitter::emitPaddedRead(OpBuilder &b, ReadOp read, Value memref,
                                  ValueRange indices) {
  Location loc = read.getLoc();
  SmallVector<Value> coords;
  Value inside;
  for (auto [pos, expr] : llvm::enumerate(read.getMap().getResults())) {
    Value c = affine::expandAffineExpr(b, loc, expr, indices, {});
    coords.push_back(
        guardCoordinate(b, loc, c, getDim(b, loc, memref, pos), inside));
  }
  return emitGuardedLoad(b, loc, memref, coords, inside, read.getFillAttr());
}

Value BodyEmitter::emitGuardedLoad(OpBuilder &b, Location loc, Value memref,
                                   ValueRange coords, Value inside,
                                   TypedAttr outside) {
  Value v = load(b, loc, memref, coords);
  Type ct = getComputeType(v.getType());
  if (ct != v.getType())
    v = arith::ExtFOp::create(b, loc, ct, v);
  if (!inside)
    return v;
  Value fill = arith::ConstantOp::create(b, loc, outside);
  if (ct != fill.getType())
    fill = arith::ExtFOp::create(b, loc, ct, fill);
  return arith::SelectOp::create(b, loc, inside, v, fill);
}

FailureOr<SmallVector<Value>> BodyEmitter::emitBody(OpBuilder &b, Block &body,
                                                    IRMapping &mapping) {
  for (Operation &op : body.without_terminator())
    if (failed(emitOp(b, &op, mapping)))
      return failure();
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return mapping.lookup(v); });
}

FailureOr<SmallVector<Value>>
BodyEmitter::emitSerialReduction(OpBuilder &b, ComprehensionOp op,
                                 IRMapping &mapping) {
  if (op.getNumReduced() == 0)
    return emitBody(b, op.getBodyBlock(), mapping);
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(op);
  if (failed(mc))
    return failure();
  mc->setApproximate(approximate);
  // What does not depend on the reduced indices (a row's nested reduction
  // in a fused consumer) is computed once, before the loops (--tang-fuse's
  // work model counts it so).
  llvm::DenseSet<Value> variant;
  for (unsigned i = op.getNumParallel(); i < op.getNumIndices(); ++i)
    variant.insert(op.getIndex(i));
  SmallVector<Operation *> inLoop;
  for (Operation &inner : op.getBodyBlock().without_terminator()) {
    bool dep = false;
    inner.walk([&](Operation *o) {
      for (Value v : o->getOperands())
        dep |= variant.contains(v);
    });
    if (dep) {
      variant.insert(inner.result_begin(), inner.result_end());
      inLoop.push_back(&inner);
    } else if (failed(emitOp(b, &inner, mapping))) {
      return failure();
    }
  }
  // One thread covers the whole domain: start 0, step 1.
  Value zero = arith::ConstantIndexOp::create(b, op.getLoc(), 0);
  FailureOr<SmallVector<Value>> carrier =
      emitPartialReduction(b, op, mapping, *mc, zero, 1, [&](OpBuilder &ob) {
        for (Operation *inner : inLoop)
          if (failed(emitOp(ob, inner, mapping)))
            return failure();
        return success();
      });
  if (failed(carrier))
    return failure();
  return mc->finalize(b, op.getLoc(), *carrier);
}

FailureOr<SmallVector<Value>> BodyEmitter::emitStridedReduction(
    OpBuilder &b, ComprehensionOp op, IRMapping &mapping,
    const MonoidCodegen &monoid, Value lb, Value ub, Value step) {
  Location loc = op.getLoc();
  Value index = op.getIndex(op.getNumIndices() - 1);
  bool failedBody = false;
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, monoid.identity(b, loc),
      [&](OpBuilder &lb, Location, Value i, ValueRange carrier) {
        IRMapping inner = mapping;
        inner.map(index, i);
        FailureOr<SmallVector<Value>> ys =
            emitBody(lb, op.getBodyBlock(), inner);
        if (failed(ys)) {
          failedBody = true;
          scf::YieldOp::create(lb, loc, carrier);
          return;
        }
        scf::YieldOp::create(lb, loc, monoid.accumulate(lb, loc, carrier, *ys));
      });
  if (failedBody)
    return failure();
  return SmallVector<Value>(loop.getResults());
}

FailureOr<SmallVector<Value>> BodyEmitter::emitPartialReduction(
    OpBuilder &b, ComprehensionOp op, IRMapping &mapping,
    const MonoidCodegen &monoid, Value tid, int64_t threads,
    llvm::function_ref<LogicalResult(OpBuilder &)> body) {
  Location loc = op.getLoc();
  SmallVector<Value> init = monoid.identity(b, loc);
  unsigned last = op.getNumIndices() - 1;
  bool failedBody = false;
  auto accumulate = [&](OpBuilder &ob,
                        ValueRange carrier) -> SmallVector<Value> {
    if (failed(body(ob))) {
      failedBody = true;
      return llvm::to_vector(carrier);
    }
    SmallVector<Value> yields =
        llvm::map_to_vector(op.getYield().getValues(), [&](Value v) {
          return mapping.lookupOrDefault(v);
        });
    return monoid.accumulate(ob, loc, carrier, yields);
  };
  for (unsigned r = op.getNumParallel(); r <= last; ++r)
    if (threads > 1 && op.isSymbolicExtent(r))
      return op.emitOpError() << "has a symbolic reduced extent, which only "
                                 "one thread per reduction runs yet";
  if (threads > 1 && !monoid.isCommutative()) {
    // A consecutive run of the row-major reduced domain per thread.
    int64_t total = 1;
    for (unsigned r = op.getNumParallel(); r <= last; ++r)
      total *= op.getExtent(r);
    int64_t run = llvm::divideCeil(total, threads);
    auto cst = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    Value lb = arith::MulIOp::create(b, loc, tid, cst(run));
    Value ub = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lb, cst(run)), cst(total));
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, cst(1), init,
        [&](OpBuilder &ob, Location, Value iv, ValueRange iter) {
          Value rest = iv;
          for (unsigned r = last; r > op.getNumParallel(); --r) {
            Value ext =
                arith::ConstantIndexOp::create(ob, loc, op.getExtent(r));
            mapping.map(op.getIndex(r),
                        arith::RemUIOp::create(ob, loc, rest, ext));
            rest = arith::DivUIOp::create(ob, loc, rest, ext);
          }
          mapping.map(op.getIndex(op.getNumParallel()), rest);
          scf::YieldOp::create(ob, loc, accumulate(ob, iter));
        });
    if (failedBody)
      return failure();
    return SmallVector<Value>(loop.getResults());
  }
  Value start = tid;
  int64_t step = threads;
  std::function<SmallVector<Value>(OpBuilder &, unsigned, ValueRange)> loops =
      [&](OpBuilder &ob, unsigned r, ValueRange carrier) -> SmallVector<Value> {
    if (r == op.getNumIndices())
      return accumulate(ob, carrier);
    Value lb = r == last ? start : arith::ConstantIndexOp::create(ob, loc, 0);
    Value ub = getExtent(ob, loc, op, r);
    Value st = arith::ConstantIndexOp::create(ob, loc, r == last ? step : 1);
    auto loop = scf::ForOp::create(
        ob, loc, lb, ub, st, carrier,
        [&](OpBuilder &lb2, Location, Value iv, ValueRange iter) {
          mapping.map(op.getIndex(r), iv);
          SmallVector<Value> next = loops(lb2, r + 1, iter);
          scf::YieldOp::create(lb2, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  };
  SmallVector<Value> carrier = loops(b, op.getNumParallel(), init);
  if (failedBody)
    return failure();
  return carrier;
}

LogicalResult BodyEmitter::materialize(Operation *op, IRMapping &mapping) {
  Location loc = op->getLoc();
  // Scalar constants hoisted to the function level are rematerialised.
  for (Value v : op->getOperands()) {
    if (mapping.contains(v) || isa<ShapedType>(v.getType()))
      continue;
    // A size used in a body (a length a body divides by).
    if (sizes && v.getType().isIndex() && !v.getDefiningOp<arith::ConstantOp>())
      if (FailureOr<Size> size = getSizeOf(v); succeeded(size)) {
        OpBuilder atEntry = sizes->getEntryBuilder();
        mapping.map(v, sizes->get(atEntry, loc, *size));
        continue;
      }
    auto c = v.getDefiningOp<arith::ConstantOp>();
    if (!c)
      return op->emitOpError()
             << "uses a value the kernel form cannot bring into a kernel";
    OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
    if (failed(emitOp(atEntry, c, mapping)))
      return failure();
  }
  return success();
}

LogicalResult BodyEmitter::emitOp(OpBuilder &b, Operation *op,
                                  IRMapping &mapping) {
  Location loc = op->getLoc();
  if (failed(materialize(op, mapping)))
    return failure();

  if (auto read = dyn_cast<ReadOp>(op)) {
    Value memref = tensors.lookupOrNull(read.getTensor());
    if (!memref)
      return read.emitOpError()
             << "reads a tensor with no buffer in the kernel";
    SmallVector<Value> indices = llvm::map_to_vector(
        read.getIndices(), [&](Value v) { return mapping.lookup(v); });
    mapping.map(read.getResult(),
                read.getFill()
                    ? emitPaddedRead(b, read, memref, indices)
                    : emitRead(b, loc, memref, read.getMap(), indices));
    return success();
  }
  if (auto gather = dyn_cast<GatherOp>(op))
    return emitGather(b, gather, mapping);
  if (auto index = dyn_cast<IndexOp>(op)) {
    SmallVector<Value> operands = llvm::map_to_vector(
        index.getIndices(), [&](Value v) { return mapping.lookup(v); });
    Value v = affine::expandAffineExpr(b, loc, index.getMap().getResult(0),
                                       operands, {});
    Type t = getComputeType(index.getType());
    if (isa<FloatType>(t)) {
      v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
      v = arith::SIToFPOp::create(b, loc, t, v);
    } else {
      v = arith::IndexCastOp::create(b, loc, t, v);
    }
    mapping.map(index.getResult(), v);
    return success();
  }
  if (auto nested = dyn_cast<ComprehensionOp>(op)) {
    FailureOr<SmallVector<Value>> results =
        emitSerialReduction(b, nested, mapping);
    if (failed(results))
      return failure();
    for (auto [r, v] : llvm::zip(nested.getResults(), *results))
      mapping.map(r, v);
    return success();
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    Type t = getComputeType(c.getType());
    if (auto f = dyn_cast<FloatAttr>(c.getValue()); f && t != c.getType()) {
      mapping.map(c.getResult(),
                  arith::ConstantOp::create(
                      b, loc, t, b.getFloatAttr(t, f.getValueAsDouble())));
      return success();
    }
  }
  if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
    Value in = mapping.lookup(op->getOperand(0));
    Type t = getComputeType(op->getResult(0).getType());
    if (in.getType() == t) {
      mapping.map(op->getResult(0), in);
      return success();
    }
  }
  if (op->getNumRegions() != 0)
    return op->emitOpError() << "with regions is not supported by the kernel "
                                "form";
  if (approximate && nvvmExp && isa<math::ExpOp>(op) &&
      getComputeType(op->getResult(0).getType()).isF32()) {
    mapping.map(op->getResult(0),
                emitNvvmExp(b, loc, mapping.lookup(op->getOperand(0))));
    return success();
  }
  Operation *clone = b.clone(*op, mapping);
  for (OpResult r : clone->getResults())
    r.setType(getComputeType(r.getType()));
  if (approximate)
    allowApproximation(clone);
  if (contract)
    allowContraction(clone);
  return success();
}
