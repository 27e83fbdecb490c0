//===- Interpreter.cpp - the float64 reference interpreter ------*- C++ -*-===//
//
// Evaluates tang functions in float64. Each comprehension body is compiled
// once into a list of closures over a flat frame of slots (one per scalar
// SSA value and per iteration index), then run for every point of the
// iteration domain: parallel points in row-major order, and for each of them
// the reduced points in row-major order, combined under the monoid from its
// identity. Views are materialised; reads index the materialised tensors.
//
// Scalars are float64 throughout. Integer values are held exactly and wrapped
// to their bit width (i1 as 0 or 1); `arith.truncf`/`arith.extf` are the
// identity, because the reference computes exact math and rounding to a
// storage type is a schedule's business.
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Interpreter.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Tensor and random inputs
//===----------------------------------------------------------------------===//

int64_t Tensor::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SmallVector<int64_t> Tensor::getStrides() const {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

static uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Tensor mlir::tang::makeRandomTensor(RankedTensorType type, uint64_t seed,
                                    uint64_t stream) {
  Tensor t;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  t.elementType = type.getElementType();
  t.data.resize(t.getNumElements());
  uint64_t state = seed * 0x2545f4914f6cdd1dULL + stream * 0x9e3779b97f4a7c15ULL;
  splitMix64(state);
  Type et = t.elementType;
  for (double &v : t.data) {
    uint64_t r = splitMix64(state);
    if (isa<FloatType>(et))
      v = static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    else if (et.isInteger(1))
      v = static_cast<double>(r >> 63);
    else
      v = static_cast<double>(static_cast<int64_t>(r % 17) - 8);
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Integer helpers
//===----------------------------------------------------------------------===//

namespace {

unsigned getBitWidth(Type t) {
  t = getElementTypeOrSelf(t);
  if (t.isIndex())
    return 64;
  return t.getIntOrFloatBitWidth();
}

/// The two's-complement bits of a held integer value.
uint64_t toBits(double v, unsigned width) {
  if (width == 1)
    return static_cast<uint64_t>(v != 0);
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}
int64_t toSigned(double v, unsigned width) {
  uint64_t bits = toBits(v, width);
  if (width >= 64)
    return static_cast<int64_t>(bits);
  uint64_t sign = uint64_t(1) << (width - 1);
  bits &= (sign << 1) - 1;
  return static_cast<int64_t>((bits ^ sign) - sign);
}
uint64_t toUnsigned(double v, unsigned width) {
  uint64_t bits = toBits(v, width);
  return width >= 64 ? bits : bits & ((uint64_t(1) << width) - 1);
}
/// Wraps two's-complement `bits` to `width` and returns the held value.
double fromBits(uint64_t bits, unsigned width) {
  if (width == 1)
    return static_cast<double>(bits & 1);
  return static_cast<double>(toSigned(static_cast<double>(
                                          static_cast<int64_t>(bits)),
                                      width));
}

double identityFor(MonoidKind kind, Type t) {
  bool isFloat = isa<FloatType>(t);
  unsigned w = isFloat ? 0 : getBitWidth(t);
  double inf = std::numeric_limits<double>::infinity();
  switch (kind) {
  case MonoidKind::Add:
  case MonoidKind::Or:
    return 0;
  case MonoidKind::Mul:
    return 1;
  case MonoidKind::And:
    return w == 1 ? 1 : -1;
  case MonoidKind::Max:
  case MonoidKind::ArgMax:
  case MonoidKind::SoftmaxNorm:
  case MonoidKind::OnlineSoftmax:
    if (isFloat)
      return -inf;
    return w == 1 ? 0 : -std::ldexp(1.0, w - 1);
  case MonoidKind::Min:
  case MonoidKind::ArgMin:
    if (isFloat)
      return inf;
    return w == 1 ? 1 : std::ldexp(1.0, w - 1) - 1;
  }
  llvm_unreachable("unknown monoid");
}

//===----------------------------------------------------------------------===//
// Compiled form
//===----------------------------------------------------------------------===//

using Slot = unsigned;
using Instr = std::function<void(double *)>;

/// The first runtime error (e.g. integer division by zero); reported after
/// the comprehension that raised it finishes.
struct ErrorState {
  Operation *op = nullptr;
  std::string message;
  void raise(Operation *at, StringRef msg) {
    if (!op) {
      op = at;
      message = msg.str();
    }
  }
};

/// How a comprehension combines its body's yields: the carrier lives in
/// `carrierSize` doubles.
struct MonoidEval {
  unsigned carrierSize = 0;
  std::function<void(double *acc)> init;
  /// acc := combine(acc, lift(yields))
  std::function<void(double *acc, const double *yields)> accumulate;
  /// results := finalise(acc)
  std::function<void(const double *acc, double *results)> finalize;
};

/// A compiled comprehension body.
struct Plan {
  SmallVector<Slot> indexSlots;
  SmallVector<int64_t> extents;
  unsigned numParallel = 0;
  std::vector<Instr> body;
  SmallVector<Slot> yieldSlots;
  std::optional<MonoidEval> monoid; // None: a map.
  unsigned numResults = 0;

  /// Evaluates the comprehension at the parallel point already stored in the
  /// frame; writes `numResults` values to `results`.
  void evalPoint(double *frame, double *results) const {
    if (!monoid) {
      for (const Instr &i : body)
        i(frame);
      for (auto [k, s] : llvm::enumerate(yieldSlots))
        results[k] = frame[s];
      return;
    }
    SmallVector<double, 8> acc(monoid->carrierSize), yields(yieldSlots.size());
    monoid->init(acc.data());
    unsigned numReduced = extents.size() - numParallel;
    SmallVector<int64_t, 4> idx(numReduced, 0);
    for (unsigned r = 0; r < numReduced; ++r)
      frame[indexSlots[numParallel + r]] = 0;
    while (true) {
      for (const Instr &i : body)
        i(frame);
      for (auto [k, s] : llvm::enumerate(yieldSlots))
        yields[k] = frame[s];
      monoid->accumulate(acc.data(), yields.data());
      // Next reduced point, row-major.
      int r = static_cast<int>(numReduced) - 1;
      for (; r >= 0; --r) {
        if (++idx[r] < extents[numParallel + r]) {
          frame[indexSlots[numParallel + r]] = static_cast<double>(idx[r]);
          break;
        }
        idx[r] = 0;
        frame[indexSlots[numParallel + r]] = 0;
      }
      if (r < 0)
        break;
    }
    monoid->finalize(acc.data(), results);
  }
};

/// A linear form c0 + sum_d coeffs[d] * index_d.
struct Linear {
  SmallVector<int64_t> coeffs;
  int64_t constant = 0;
};

std::optional<Linear> linearize(AffineExpr e, unsigned numDims) {
  Linear l;
  l.coeffs.assign(numDims, 0);
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    l.constant = c.getValue();
    return l;
  }
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    l.coeffs[d.getPosition()] = 1;
    return l;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  std::optional<Linear> a = linearize(bin.getLHS(), numDims);
  std::optional<Linear> b = linearize(bin.getRHS(), numDims);
  if (!a || !b)
    return std::nullopt;
  if (e.getKind() == AffineExprKind::Add) {
    for (unsigned i = 0; i < numDims; ++i)
      a->coeffs[i] += b->coeffs[i];
    a->constant += b->constant;
    return a;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    // One side is a constant in a pure affine expression.
    if (llvm::any_of(b->coeffs, [](int64_t c) { return c != 0; }))
      std::swap(a, b);
    for (int64_t &c : a->coeffs)
      c *= b->constant;
    a->constant *= b->constant;
    return a;
  }
  return std::nullopt;
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Evaluates an affine expression on integer dimension values.
int64_t evalAffine(AffineExpr e, ArrayRef<int64_t> dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dims[d.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(e);
  int64_t a = evalAffine(bin.getLHS(), dims), b = evalAffine(bin.getRHS(), dims);
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return a + b;
  case AffineExprKind::Mul:
    return a * b;
  case AffineExprKind::FloorDiv:
    return floorDiv(a, b);
  case AffineExprKind::CeilDiv:
    return -floorDiv(-a, b);
  case AffineExprKind::Mod:
    return a - floorDiv(a, b) * b;
  default:
    llvm_unreachable("symbols are rejected by the verifier");
  }
}

using TensorMap = llvm::DenseMap<Value, std::shared_ptr<Tensor>>;

/// The held value of a scalar `arith.constant`.
std::optional<double> getScalarConstant(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  if (!c)
    return std::nullopt;
  if (auto fa = dyn_cast<FloatAttr>(c.getValue()))
    return fa.getValueAsDouble();
  if (auto ia = dyn_cast<IntegerAttr>(c.getValue()))
    return fromBits(ia.getValue().getZExtValue(), getBitWidth(ia.getType()));
  return std::nullopt;
}

/// Compiles comprehension bodies (and user monoids' combine regions) into
/// closures over a frame.
class Compiler {
public:
  Compiler(const TensorMap &tensors, ErrorState &err)
      : tensors(tensors), err(err) {}

  unsigned getNumSlots() const { return numSlots; }
  Slot slotOf(Value v) {
    auto [it, inserted] = slots.try_emplace(v, numSlots);
    if (inserted)
      ++numSlots;
    return it->second;
  }

  FailureOr<std::shared_ptr<Plan>> compileComprehension(ComprehensionOp op);
  FailureOr<MonoidEval> compileUserMonoid(MonoidOp op);

private:
  LogicalResult compileBlock(Block &block, std::vector<Instr> &out);
  LogicalResult compileOp(Operation *op, std::vector<Instr> &out);
  LogicalResult compileRead(ReadOp op, std::vector<Instr> &out);
  FailureOr<MonoidEval> compileMonoid(ComprehensionOp op);

  const TensorMap &tensors;
  ErrorState &err;
  llvm::DenseMap<Value, Slot> slots;
  unsigned numSlots = 0;
};

} // namespace

LogicalResult Compiler::compileBlock(Block &block, std::vector<Instr> &out) {
  for (Operation &op : block.without_terminator())
    if (failed(compileOp(&op, out)))
      return failure();
  return success();
}

FailureOr<std::shared_ptr<Plan>>
Compiler::compileComprehension(ComprehensionOp op) {
  auto plan = std::make_shared<Plan>();
  plan->numParallel = op.getNumParallel();
  for (unsigned i = 0, e = op.getNumIndices(); i < e; ++i) {
    plan->indexSlots.push_back(slotOf(op.getIndex(i)));
    plan->extents.push_back(op.getExtent(i));
  }
  if (failed(compileBlock(op.getBodyBlock(), plan->body)))
    return failure();
  for (Value v : op.getYield().getValues())
    plan->yieldSlots.push_back(slotOf(v));
  plan->numResults = op.getNumResults();
  if (op.getMonoidAttr()) {
    FailureOr<MonoidEval> m = compileMonoid(op);
    if (failed(m))
      return failure();
    plan->monoid = std::move(*m);
  }
  return plan;
}

FailureOr<MonoidEval> Compiler::compileMonoid(ComprehensionOp op) {
  std::optional<MonoidKind> kind = op.getBuiltinMonoid();
  if (!kind) {
    auto sym = cast<FlatSymbolRefAttr>(op.getMonoidAttr());
    auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(op, sym);
    if (!monoid)
      return op.emitError() << "tang-run: cannot find monoid " << sym;
    return compileUserMonoid(monoid);
  }
  Type t = op.getYield().getValues().front().getType();
  double id = identityFor(*kind, t);
  MonoidEval m;
  m.carrierSize = 1;
  m.finalize = [](const double *acc, double *res) { res[0] = acc[0]; };
  unsigned w = isa<FloatType>(t) ? 0 : getBitWidth(t);
  switch (*kind) {
  case MonoidKind::Add:
    m.accumulate = [w](double *a, const double *y) {
      a[0] = w ? fromBits(toBits(a[0], w) + toBits(y[0], w), w) : a[0] + y[0];
    };
    break;
  case MonoidKind::Mul:
    m.accumulate = [w](double *a, const double *y) {
      a[0] = w ? fromBits(toBits(a[0], w) * toBits(y[0], w), w) : a[0] * y[0];
    };
    break;
  case MonoidKind::Max:
    m.accumulate = [](double *a, const double *y) {
      a[0] = (std::isnan(a[0]) || std::isnan(y[0])) ? NAN : std::max(a[0], y[0]);
    };
    break;
  case MonoidKind::Min:
    m.accumulate = [](double *a, const double *y) {
      a[0] = (std::isnan(a[0]) || std::isnan(y[0])) ? NAN : std::min(a[0], y[0]);
    };
    break;
  case MonoidKind::And:
    m.accumulate = [w](double *a, const double *y) {
      a[0] = fromBits(toBits(a[0], w) & toBits(y[0], w), w);
    };
    break;
  case MonoidKind::Or:
    m.accumulate = [w](double *a, const double *y) {
      a[0] = fromBits(toBits(a[0], w) | toBits(y[0], w), w);
    };
    break;
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin: {
    // Carrier (value, index); ties keep the smaller index, like numpy.
    bool isMax = *kind == MonoidKind::ArgMax;
    m.carrierSize = 2;
    m.accumulate = [isMax](double *a, const double *y) {
      bool take;
      if (std::isnan(a[0]) || std::isnan(y[0]))
        take = std::isnan(y[0]) && !std::isnan(a[0]);
      else if (y[0] == a[0])
        take = y[1] < a[1];
      else
        take = isMax ? y[0] > a[0] : y[0] < a[0];
      if (take) {
        a[0] = y[0];
        a[1] = y[1];
      }
    };
    m.finalize = [](const double *a, double *res) {
      res[0] = a[0];
      res[1] = a[1];
    };
    m.init = [id](double *a) {
      a[0] = id;
      a[1] = std::numeric_limits<double>::infinity();
    };
    // An empty domain cannot happen (extents are positive), so the index is
    // always replaced by a real one.
    return m;
  }
  case MonoidKind::SoftmaxNorm:
    // Carrier (m, l); x lifts to (x, 1).
    m.carrierSize = 2;
    m.init = [](double *a) {
      a[0] = -std::numeric_limits<double>::infinity();
      a[1] = 0;
    };
    m.accumulate = [](double *a, const double *y) {
      double mx = std::max(a[0], y[0]);
      // Only -inf so far (e.g. masked scores): nothing to add yet.
      if (mx == -std::numeric_limits<double>::infinity())
        return;
      a[1] = (a[1] == 0 ? 0 : a[1] * std::exp(a[0] - mx)) + std::exp(y[0] - mx);
      a[0] = mx;
    };
    m.finalize = [](const double *a, double *res) {
      res[0] = a[0];
      res[1] = a[1];
    };
    return m;
  case MonoidKind::OnlineSoftmax:
    // Carrier (m, l, acc); (s, v) lifts to (s, 1, v); finalised to acc / l.
    m.carrierSize = 3;
    m.init = [](double *a) {
      a[0] = -std::numeric_limits<double>::infinity();
      a[1] = 0;
      a[2] = 0;
    };
    m.accumulate = [](double *a, const double *y) {
      double mx = std::max(a[0], y[0]);
      // A masked score of -inf against an empty carrier contributes nothing.
      if (mx == -std::numeric_limits<double>::infinity())
        return;
      double oldScale = a[1] == 0 ? 0 : std::exp(a[0] - mx);
      double newScale = std::exp(y[0] - mx);
      a[1] = a[1] * oldScale + newScale;
      a[2] = a[2] * oldScale + y[1] * newScale;
      a[0] = mx;
    };
    m.finalize = [](const double *a, double *res) { res[0] = a[2] / a[1]; };
    return m;
  }
  m.init = [id](double *a) { a[0] = id; };
  return m;
}

FailureOr<MonoidEval> Compiler::compileUserMonoid(MonoidOp op) {
  // The combine region runs on its own frame.
  auto sub = std::make_shared<Compiler>(tensors, err);
  Block &b = op.getCombine().front();
  auto argSlots = std::make_shared<SmallVector<Slot>>();
  for (BlockArgument a : b.getArguments())
    argSlots->push_back(sub->slotOf(a));
  auto body = std::make_shared<std::vector<Instr>>();
  if (failed(sub->compileBlock(b, *body)))
    return failure();
  auto yieldSlots = std::make_shared<SmallVector<Slot>>();
  for (Value v : cast<YieldOp>(b.getTerminator()).getValues())
    yieldSlots->push_back(sub->slotOf(v));
  auto frame = std::make_shared<std::vector<double>>(sub->getNumSlots());

  SmallVector<double> identity;
  for (Attribute a : op.getIdentity()) {
    if (auto f = dyn_cast<FloatAttr>(a))
      identity.push_back(f.getValueAsDouble());
    else
      identity.push_back(static_cast<double>(
          cast<IntegerAttr>(a).getType().isInteger(1)
              ? cast<IntegerAttr>(a).getValue().getZExtValue()
              : cast<IntegerAttr>(a).getValue().getSExtValue()));
  }
  unsigned n = identity.size();
  MonoidEval m;
  m.carrierSize = n;
  m.init = [identity](double *a) { llvm::copy(identity, a); };
  m.accumulate = [=](double *a, const double *y) {
    double *f = frame->data();
    for (unsigned i = 0; i < n; ++i) {
      f[(*argSlots)[i]] = a[i];
      f[(*argSlots)[n + i]] = y[i];
    }
    for (const Instr &i : *body)
      i(f);
    for (unsigned i = 0; i < n; ++i)
      a[i] = f[(*yieldSlots)[i]];
  };
  m.finalize = [n](const double *a, double *res) { std::copy(a, a + n, res); };
  // Keep the sub-compiler alive for as long as the closures.
  (void)sub;
  return m;
}

LogicalResult Compiler::compileRead(ReadOp op, std::vector<Instr> &out) {
  auto it = tensors.find(op.getTensor());
  if (it == tensors.end())
    return op.emitError() << "tang-run: the tensor read here is not a "
                             "function-level value";
  std::shared_ptr<Tensor> t = it->second;
  Slot dst = slotOf(op.getResult());
  SmallVector<Slot> idx;
  for (Value v : op.getIndices())
    idx.push_back(slotOf(v));
  AffineMap map = op.getMap();
  SmallVector<int64_t> strides = t->getStrides();
  int64_t numElements = t->getNumElements();

  // Fast path: the flat offset is linear in the indices.
  Linear flat;
  flat.coeffs.assign(idx.size(), 0);
  bool linear = true;
  for (auto [r, e] : llvm::enumerate(map.getResults())) {
    std::optional<Linear> l = linearize(e, idx.size());
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
  if (linear) {
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
  out.push_back([t, dst, idx, map, strides, e, at](double *f) {
    SmallVector<int64_t, 8> dims;
    for (Slot s : idx)
      dims.push_back(static_cast<int64_t>(f[s]));
    int64_t off = 0;
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      int64_t c = evalAffine(expr, dims);
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

LogicalResult Compiler::compileOp(Operation *op, std::vector<Instr> &out) {
  ErrorState *e = &err;
  // Every scalar operand is computed earlier in the compiled bodies, or is a
  // scalar constant captured from the function level.
  for (OpOperand &use : op->getOpOperands()) {
    Value v = use.get();
    if (slots.count(v) || isa<RankedTensorType>(v.getType()))
      continue;
    std::optional<double> c = getScalarConstant(v);
    if (!c)
      return op->emitError() << "tang-run: operand #" << use.getOperandNumber()
                             << " is not computed in this comprehension body";
    Slot d = slotOf(v);
    out.push_back([d, c](double *f) { f[d] = *c; });
  }
  auto unary = [&](Value in, Value res, double (*fn)(double)) {
    Slot a = slotOf(in), d = slotOf(res);
    out.push_back([a, d, fn](double *f) { f[d] = fn(f[a]); });
    return success();
  };
  auto binary = [&](Operation *o, double (*fn)(double, double)) {
    Slot a = slotOf(o->getOperand(0)), b = slotOf(o->getOperand(1)),
         d = slotOf(o->getResult(0));
    out.push_back([a, b, d, fn](double *f) { f[d] = fn(f[a], f[b]); });
    return success();
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
      std::optional<uint64_t> r =
          fn(toUnsigned(f[a], w), toUnsigned(f[b], w), toSigned(f[a], w),
             toSigned(f[b], w), w);
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
          int64_t v = evalAffine(expr, dims);
          f[d] = w ? fromBits(static_cast<uint64_t>(v), w)
                   : static_cast<double>(v);
        });
        return success();
      })
      .Case<ComprehensionOp>([&](ComprehensionOp c) -> LogicalResult {
        FailureOr<std::shared_ptr<Plan>> plan = compileComprehension(c);
        if (failed(plan))
          return failure();
        SmallVector<Slot> res;
        for (Value v : c.getResults())
          res.push_back(slotOf(v));
        std::shared_ptr<Plan> p = *plan;
        out.push_back([p, res](double *f) {
          SmallVector<double, 4> vals(res.size());
          p->evalPoint(f, vals.data());
          for (auto [k, s] : llvm::enumerate(res))
            f[s] = vals[k];
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
          f[d] = fromBits(static_cast<uint64_t>(
                              static_cast<int64_t>(std::trunc(f[a]))),
                          w);
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
          case P::AlwaysFalse: r = false; break;
          case P::AlwaysTrue: r = true; break;
          case P::OEQ: r = !unordered && x == y; break;
          case P::OGT: r = !unordered && x > y; break;
          case P::OGE: r = !unordered && x >= y; break;
          case P::OLT: r = !unordered && x < y; break;
          case P::OLE: r = !unordered && x <= y; break;
          case P::ONE: r = !unordered && x != y; break;
          case P::ORD: r = !unordered; break;
          case P::UEQ: r = unordered || x == y; break;
          case P::UGT: r = unordered || x > y; break;
          case P::UGE: r = unordered || x >= y; break;
          case P::ULT: r = unordered || x < y; break;
          case P::ULE: r = unordered || x <= y; break;
          case P::UNE: r = unordered || x != y; break;
          case P::UNO: r = unordered; break;
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
        out.push_back([c, a, b, d](double *f) { f[d] = f[c] != 0 ? f[a] : f[b]; });
        return success();
      })
      // arith: integer arithmetic
      .Case<arith::AddIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a + b; });
      })
      .Case<arith::SubIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a - b; });
      })
      .Case<arith::MulIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a * b; });
      })
      .Case<arith::AndIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a & b; });
      })
      .Case<arith::OrIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a | b; });
      })
      .Case<arith::XOrIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R { return a ^ b; });
      })
      .Case<arith::DivSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
          return static_cast<U>(a / b);
        });
      })
      .Case<arith::RemSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
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
          return static_cast<U>(floorDiv(a, b));
        });
      })
      .Case<arith::CeilDivSIOp>([&](Operation *o) {
        return intBinary(o, [](U, U, S a, S b, unsigned) -> R {
          if (b == 0)
            return std::nullopt;
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
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R {
          return std::max(a, b);
        });
      })
      .Case<arith::MinUIOp>([&](Operation *o) {
        return intBinary(o, [](U a, U b, S, S, unsigned) -> R {
          return std::min(a, b);
        });
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
          case P::eq: r = ua == ub; break;
          case P::ne: r = ua != ub; break;
          case P::slt: r = sa < sb; break;
          case P::sle: r = sa <= sb; break;
          case P::sgt: r = sa > sb; break;
          case P::sge: r = sa >= sb; break;
          case P::ult: r = ua < ub; break;
          case P::ule: r = ua <= ub; break;
          case P::ugt: r = ua > ub; break;
          case P::uge: r = ua >= ub; break;
          }
          f[d] = r;
        });
        return success();
      })
      // math
      .Case<math::ExpOp>([&](math::ExpOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::exp(x); });
      })
      .Case<math::Exp2Op>([&](math::Exp2Op o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::exp2(x); });
      })
      .Case<math::ExpM1Op>([&](math::ExpM1Op o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::expm1(x); });
      })
      .Case<math::LogOp>([&](math::LogOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::log(x); });
      })
      .Case<math::Log2Op>([&](math::Log2Op o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::log2(x); });
      })
      .Case<math::Log10Op>([&](math::Log10Op o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::log10(x); });
      })
      .Case<math::Log1pOp>([&](math::Log1pOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::log1p(x); });
      })
      .Case<math::SqrtOp>([&](math::SqrtOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::sqrt(x); });
      })
      .Case<math::RsqrtOp>([&](math::RsqrtOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case<math::TanhOp>([&](math::TanhOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::tanh(x); });
      })
      .Case<math::SinhOp>([&](math::SinhOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::sinh(x); });
      })
      .Case<math::CoshOp>([&](math::CoshOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::cosh(x); });
      })
      .Case<math::ErfOp>([&](math::ErfOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::erf(x); });
      })
      .Case<math::ErfcOp>([&](math::ErfcOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::erfc(x); });
      })
      .Case<math::AbsFOp>([&](math::AbsFOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::fabs(x); });
      })
      .Case<math::SinOp>([&](math::SinOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::sin(x); });
      })
      .Case<math::CosOp>([&](math::CosOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::cos(x); });
      })
      .Case<math::TanOp>([&](math::TanOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::tan(x); });
      })
      .Case<math::AtanOp>([&](math::AtanOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::atan(x); });
      })
      .Case<math::FloorOp>([&](math::FloorOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::floor(x); });
      })
      .Case<math::CeilOp>([&](math::CeilOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::ceil(x); });
      })
      .Case<math::RoundOp>([&](math::RoundOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::round(x); });
      })
      .Case<math::RoundEvenOp>([&](math::RoundEvenOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::nearbyint(x); });
      })
      .Case<math::TruncOp>([&](math::TruncOp o) {
        return unary(o.getOperand(), o.getResult(), [](double x) { return std::trunc(x); });
      })
      .Case<math::AbsIOp>([&](math::AbsIOp o) {
        Slot a = slotOf(o.getOperand()), d = slotOf(o.getResult());
        unsigned w = getBitWidth(o.getType());
        out.push_back([a, d, w](double *f) {
          S v = toSigned(f[a], w);
          f[d] = fromBits(static_cast<U>(v < 0 ? -v : v), w);
        });
        return success();
      })
      .Case<math::PowFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::pow(a, b); });
      })
      .Case<math::Atan2Op>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::atan2(a, b); });
      })
      .Case<math::CopySignOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::copysign(a, b); });
      })
      .Case<math::FmaOp>([&](math::FmaOp o) {
        Slot a = slotOf(o.getA()), b = slotOf(o.getB()), c = slotOf(o.getC()),
             d = slotOf(o.getResult());
        out.push_back([a, b, c, d](double *f) { f[d] = std::fma(f[a], f[b], f[c]); });
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitError() << "tang-run: unsupported operation '"
                              << o->getName() << "' in a comprehension body";
      });
}

//===----------------------------------------------------------------------===//
// Function-level evaluation
//===----------------------------------------------------------------------===//

/// The interpreter materialises every tensor in float64; refuse anything
/// larger than this many elements (2 GiB) instead of exhausting memory.
static constexpr int64_t kMaxElements = int64_t(1) << 28;

static FailureOr<SmallVector<std::shared_ptr<Tensor>>>
evalComprehension(ComprehensionOp op, const TensorMap &tensors) {
  ErrorState err;
  Compiler compiler(tensors, err);
  FailureOr<std::shared_ptr<Plan>> planOr = compiler.compileComprehension(op);
  if (failed(planOr))
    return failure();
  const Plan &plan = **planOr;

  SmallVector<std::shared_ptr<Tensor>> results;
  int64_t numPoints = 1;
  for (unsigned i = 0; i < plan.numParallel; ++i)
    numPoints *= plan.extents[i];
  if (numPoints > kMaxElements)
    return op.emitError() << "tang-run: the result has " << numPoints
                          << " elements, more than the reference "
                             "interpreter's limit of "
                          << kMaxElements;
  for (Type t : op.getResultTypes()) {
    auto tt = cast<RankedTensorType>(t);
    auto r = std::make_shared<Tensor>();
    r->shape.assign(tt.getShape().begin(), tt.getShape().end());
    r->elementType = tt.getElementType();
    r->data.resize(numPoints);
    results.push_back(r);
  }

  std::vector<double> frame(compiler.getNumSlots(), 0.0);
  SmallVector<double, 4> vals(plan.numResults);
  SmallVector<int64_t, 4> idx(plan.numParallel, 0);
  for (int64_t point = 0; point < numPoints; ++point) {
    // Decompose the row-major point into parallel indices.
    int64_t rest = point;
    for (int i = static_cast<int>(plan.numParallel) - 1; i >= 0; --i) {
      frame[plan.indexSlots[i]] = static_cast<double>(rest % plan.extents[i]);
      rest /= plan.extents[i];
    }
    plan.evalPoint(frame.data(), vals.data());
    for (unsigned k = 0; k < plan.numResults; ++k)
      results[k]->data[point] = vals[k];
    if (err.op)
      break;
  }
  if (err.op)
    return err.op->emitError() << "tang-run: " << err.message;
  return results;
}

static std::shared_ptr<Tensor> evalView(ViewOp op, const Tensor &src) {
  auto type = cast<RankedTensorType>(op.getType());
  auto r = std::make_shared<Tensor>();
  r->shape.assign(type.getShape().begin(), type.getShape().end());
  r->elementType = type.getElementType();
  int64_t n = r->getNumElements();
  r->data.resize(n);
  SmallVector<int64_t> srcStrides = src.getStrides();
  SmallVector<int64_t> coord(r->shape.size(), 0);
  AffineMap map = op.getMap();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    for (int d = static_cast<int>(r->shape.size()) - 1; d >= 0; --d) {
      coord[d] = rest % r->shape[d];
      rest /= r->shape[d];
    }
    int64_t off = 0;
    for (auto [k, e] : llvm::enumerate(map.getResults()))
      off += evalAffine(e, coord) * srcStrides[k];
    r->data[i] = src.data[off]; // In bounds: checked by the verifier.
  }
  return r;
}

static FailureOr<std::shared_ptr<Tensor>> evalConstant(arith::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!dense || !type)
    return op.emitError() << "tang-run: unsupported constant at function "
                             "level (expected a dense tensor)";
  auto r = std::make_shared<Tensor>();
  r->shape.assign(type.getShape().begin(), type.getShape().end());
  r->elementType = type.getElementType();
  if (isa<FloatType>(r->elementType)) {
    for (APFloat v : dense.getValues<APFloat>())
      r->data.push_back(v.convertToDouble());
  } else if (r->elementType.isIntOrIndex()) {
    unsigned w = getBitWidth(r->elementType);
    for (APInt v : dense.getValues<APInt>())
      r->data.push_back(fromBits(v.getZExtValue(), w));
  } else {
    return op.emitError() << "tang-run: unsupported constant element type";
  }
  return r;
}

FailureOr<SmallVector<Tensor>> mlir::tang::interpret(func::FuncOp func,
                                                     ArrayRef<Tensor> inputs) {
  if (func.isExternal())
    return func.emitError() << "tang-run: @" << func.getSymName()
                            << " has no body";
  if (func.getNumArguments() != inputs.size())
    return func.emitError() << "tang-run: @" << func.getSymName() << " takes "
                            << func.getNumArguments() << " arguments, got "
                            << inputs.size() << " inputs";
  TensorMap tensors;
  for (auto [arg, in] : llvm::zip(func.getArguments(), inputs)) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func.emitError() << "tang-run: argument #" << arg.getArgNumber()
                              << " must be a ranked tensor, got "
                              << arg.getType();
    if (ArrayRef<int64_t>(in.shape) != type.getShape() ||
        static_cast<int64_t>(in.data.size()) != type.getNumElements())
      return func.emitError() << "tang-run: input #" << arg.getArgNumber()
                              << " does not have the shape of " << type;
    tensors[arg] = std::make_shared<Tensor>(in);
  }

  if (!func.getBody().hasOneBlock())
    return func.emitError() << "tang-run: functions must have one block";
  for (Operation &op : func.getBody().front()) {
    if (auto c = dyn_cast<ComprehensionOp>(op)) {
      auto rs = evalComprehension(c, tensors);
      if (failed(rs))
        return failure();
      for (auto [v, t] : llvm::zip(c.getResults(), *rs))
        tensors[v] = t;
      continue;
    }
    if (auto v = dyn_cast<ViewOp>(op)) {
      if (v.getType().getNumElements() > kMaxElements)
        return v.emitError() << "tang-run: the view has more elements than "
                                "the reference interpreter's limit of "
                             << kMaxElements;
      tensors[v.getResult()] = evalView(v, *tensors.lookup(v.getSource()));
      continue;
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (getScalarConstant(c.getResult()))
        continue; // Captured by the bodies that use it.
      auto t = evalConstant(c);
      if (failed(t))
        return failure();
      tensors[c.getResult()] = *t;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Tensor> outs;
      for (Value v : ret.getOperands()) {
        auto it = tensors.find(v);
        if (it == tensors.end())
          return ret.emitError() << "tang-run: returned value is not a tensor";
        outs.push_back(*it->second);
      }
      return outs;
    }
    return op.emitError() << "tang-run: unsupported operation '"
                          << op.getName() << "' at function level";
  }
  return func.emitError() << "tang-run: function has no return";
}
