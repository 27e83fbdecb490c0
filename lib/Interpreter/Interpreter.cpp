//===- Interpreter.cpp - the float64 reference interpreter ------*- C++ -*-===//
//
// Evaluates tang functions in float64. Each comprehension body is compiled
// once into a list of closures over a flat frame of slots (one per scalar
// SSA value and per iteration index), then run for every point of the
// iteration domain: parallel points in row-major order, and for each of them
// the reduced points in row-major order, combined under the monoid from its
// identity. Views are materialised; reads index the materialised tensors.
//
// Scalars are float64 throughout. Integer values are held exactly up to 2^53
// (every i32, i8 and i1 value; i64 or index intermediates beyond 2^53 are
// rounded) and wrapped to their bit width (i1 as 0 or 1);
// `arith.truncf`/`arith.extf` are the identity, because the reference computes
// exact math and rounding to a storage type is a schedule's business.
//
// Every monoid is evaluated through its lift, its binary combine on two
// carriers, its identity and its finalisation (MonoidEval), so that
// checkMonoidLaws can test the laws on the very code that reduces.
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Interpreter.h"
#include "Tang/Dialect/Tang/IR/TangMonoids.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Tensor and random inputs
//===----------------------------------------------------------------------===//

std::optional<int64_t>
mlir::tang::getNumElementsChecked(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  return n;
}

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
  uint64_t state =
      seed * 0x2545f4914f6cdd1dULL + stream * 0x9e3779b97f4a7c15ULL;
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
  // Wrap in the integers before converting: `bits` may be a full 64-bit
  // product (of two i32 values, say), which a double would round.
  if (width < 64) {
    uint64_t sign = uint64_t(1) << (width - 1);
    bits &= (sign << 1) - 1;
    bits = (bits ^ sign) - sign;
  }
  return static_cast<double>(static_cast<int64_t>(bits));
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

/// A function of doubles compiled from a block of scalar ops (see
/// Compiler::compileFunction); `out` may alias `a` or `b`.
using BlockFunction =
    std::function<void(const double *a, const double *b, double *out)>;

/// A monoid as the interpreter evaluates it. The carrier lives in
/// `carrierSize` doubles; a comprehension reduces its body's yields as
/// `acc := combine(acc, lift(yields))` from `identity`, then finalises `acc`.
/// `combine` is the monoid's real binary operation on two carriers, so the
/// laws can be checked on it directly (see checkMonoidLaws).
struct MonoidEval {
  unsigned carrierSize = 0;
  /// The carrier's component types, for printing and for comparing (integer
  /// components exactly). Builtins: the index of argmax/argmin is i32.
  SmallVector<Type> carrierTypes;
  SmallVector<double> identity;
  /// carrier := lift(yields). Empty when lift is the identity map (every
  /// builtin but softmax_norm and online_softmax, and user monoids).
  std::function<void(const double *yields, double *carrier)> lift;
  /// out := combine(a, b). `out` may alias `a` or `b`.
  std::function<void(const double *a, const double *b, double *out)> combine;
  /// results := finalise(acc)
  std::function<void(const double *acc, double *results)> finalize;

  /// acc := combine(acc, lift(yields)) in one step, where the monoid
  /// defines one (the softmax monoids); empty otherwise.
  std::function<void(const double *acc, const double *yields, double *out)>
      accumulateElement;

  void init(double *acc) const { llvm::copy(identity, acc); }
  /// acc := combine(acc, lift(yields)); `scratch` has `carrierSize` doubles.
  void accumulate(double *acc, const double *yields, double *scratch) const {
    if (accumulateElement)
      return accumulateElement(acc, yields, acc);
    if (!lift)
      return combine(acc, yields, acc);
    lift(yields, scratch);
    combine(acc, scratch, acc);
  }
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
    SmallVector<double, 8> acc(monoid->carrierSize),
        scratch(monoid->carrierSize), yields(yieldSlots.size());
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
      monoid->accumulate(acc.data(), yields.data(), scratch.data());
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
  /// `block` (arith/math ops) as a function of doubles on a frame of its
  /// own: its first `split` arguments from the first array, the rest from
  /// the second; the values of `results` out. `owner` keeps the IR alive.
  FailureOr<BlockFunction> compileFunction(Block &block, unsigned split,
                                           ValueRange results,
                                           std::shared_ptr<void> owner);

private:
  LogicalResult compileBlock(Block &block, std::vector<Instr> &out);
  LogicalResult compileOp(Operation *op, std::vector<Instr> &out);
  LogicalResult compileRead(ReadOp op, std::vector<Instr> &out);
  /// The slots of the enclosing indices a nested comprehension depends on,
  /// or nothing if it also depends on other scalars of the enclosing body.
  std::optional<SmallVector<Slot>> getMemoKey(ComprehensionOp c);
  /// Makes `v` (operand #operandNo of `user`) available in a slot: computed
  /// earlier, or a function-level scalar constant loaded by a new instr.
  LogicalResult ensureAvailable(Operation *user, Value v, unsigned operandNo,
                                std::vector<Instr> &out);
  FailureOr<MonoidEval> compileMonoid(ComprehensionOp op);

  const TensorMap &tensors;
  ErrorState &err;
  llvm::DenseMap<Value, Slot> slots;
  unsigned numSlots = 0;
};

} // namespace

/// Memo tables of nested comprehensions are bounded; past this many entries
/// a table starts over.
static constexpr size_t kMaxMemoEntries = size_t(1) << 20;

std::optional<SmallVector<Slot>> Compiler::getMemoKey(ComprehensionOp c) {
  llvm::SetVector<Value> indices;
  bool pure = true;
  c.getBodyBlock().walk([&](Operation *op) {
    for (Value v : op->getOperands()) {
      if (c->isAncestor(v.getParentRegion()->getParentOp()))
        continue; // Defined inside c.
      if (getOwningComprehension(v))
        indices.insert(v);
      else if (!isa<RankedTensorType>(v.getType()) && !getScalarConstant(v))
        pure = false; // A scalar of the enclosing body.
    }
  });
  if (!pure)
    return std::nullopt;
  SmallVector<Slot> slots;
  for (Value v : indices)
    slots.push_back(slotOf(v));
  return slots;
}

LogicalResult Compiler::ensureAvailable(Operation *user, Value v,
                                        unsigned operandNo,
                                        std::vector<Instr> &out) {
  if (slots.count(v) || isa<RankedTensorType>(v.getType()))
    return success();
  std::optional<double> c = getScalarConstant(v);
  if (!c)
    return user->emitError() << "tang-run: operand #" << operandNo
                             << " is not computed in this comprehension body";
  Slot d = slotOf(v);
  out.push_back([d, c](double *f) { f[d] = *c; });
  return success();
}

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
  for (auto [i, v] : llvm::enumerate(op.getYield().getValues())) {
    // A yielded constant may have been hoisted out of the body.
    if (failed(ensureAvailable(op.getYield(), v, i, plan->body)))
      return failure();
    plan->yieldSlots.push_back(slotOf(v));
  }
  plan->numResults = op.getNumResults();
  if (op.getMonoidAttr()) {
    FailureOr<MonoidEval> m = compileMonoid(op);
    if (failed(m))
      return failure();
    plan->monoid = std::move(*m);
  }
  return plan;
}

/// The value of a constant attribute as the interpreter holds it (i1 as 0
/// or 1).
static double attrToDouble(Attribute a) {
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

/// The builtin monoid `kind` on a body's yields of `yieldTypes`, evaluated
/// from the IR that defines it (TangMonoids.h): the same lift, combine,
/// accumulate and finalise the kernels run, in float64.
static FailureOr<MonoidEval> compileBuiltinMonoid(MonoidKind kind,
                                                  TypeRange yieldTypes,
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

FailureOr<MonoidEval> Compiler::compileMonoid(ComprehensionOp op) {
  std::optional<MonoidKind> kind = op.getBuiltinMonoid();
  if (!kind) {
    auto sym = cast<FlatSymbolRefAttr>(op.getMonoidAttr());
    auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(op, sym);
    if (!monoid)
      return op.emitError() << "tang-run: cannot find monoid " << sym;
    return compileUserMonoid(monoid);
  }
  return compileBuiltinMonoid(*kind, op.getYield().getValues().getTypes(),
                              *this);
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
      int64_t c = evaluateAffine(expr, dims);
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
  for (OpOperand &use : op->getOpOperands())
    if (failed(ensureAvailable(op, use.get(), use.getOperandNumber(), out)))
      return failure();
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
        SmallVector<Slot> res;
        for (Value v : c.getResults())
          res.push_back(slotOf(v));
        std::shared_ptr<Plan> p = *plan;
        // A nested comprehension that depends only on enclosing indices (and
        // on tensors and constants) is a pure function of those indices:
        // evaluate it once per distinct index tuple, as a schedule would.
        std::optional<SmallVector<Slot>> keySlots = getMemoKey(c);
        if (!keySlots) {
          out.push_back([p, res](double *f) {
            SmallVector<double, 4> vals(res.size());
            p->evalPoint(f, vals.data());
            for (auto [k, s] : llvm::enumerate(res))
              f[s] = vals[k];
          });
          return success();
        }
        auto memo = std::make_shared<
            std::map<std::vector<int64_t>, SmallVector<double, 4>>>();
        out.push_back([p, res, keys = *keySlots, memo](double *f) {
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
      // math
      .Case<math::ExpOp>([&](math::ExpOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::exp(x); });
      })
      .Case<math::Exp2Op>([&](math::Exp2Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::exp2(x); });
      })
      .Case<math::ExpM1Op>([&](math::ExpM1Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::expm1(x); });
      })
      .Case<math::LogOp>([&](math::LogOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log(x); });
      })
      .Case<math::Log2Op>([&](math::Log2Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log2(x); });
      })
      .Case<math::Log10Op>([&](math::Log10Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log10(x); });
      })
      .Case<math::Log1pOp>([&](math::Log1pOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log1p(x); });
      })
      .Case<math::SqrtOp>([&](math::SqrtOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sqrt(x); });
      })
      .Case<math::RsqrtOp>([&](math::RsqrtOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case<math::TanhOp>([&](math::TanhOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::tanh(x); });
      })
      .Case<math::SinhOp>([&](math::SinhOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sinh(x); });
      })
      .Case<math::CoshOp>([&](math::CoshOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::cosh(x); });
      })
      .Case<math::ErfOp>([&](math::ErfOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::erf(x); });
      })
      .Case<math::ErfcOp>([&](math::ErfcOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::erfc(x); });
      })
      .Case<math::AbsFOp>([&](math::AbsFOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::fabs(x); });
      })
      .Case<math::SinOp>([&](math::SinOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sin(x); });
      })
      .Case<math::CosOp>([&](math::CosOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::cos(x); });
      })
      .Case<math::TanOp>([&](math::TanOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::tan(x); });
      })
      .Case<math::AtanOp>([&](math::AtanOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::atan(x); });
      })
      .Case<math::FloorOp>([&](math::FloorOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::floor(x); });
      })
      .Case<math::CeilOp>([&](math::CeilOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::ceil(x); });
      })
      .Case<math::RoundOp>([&](math::RoundOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::round(x); });
      })
      .Case<math::RoundEvenOp>([&](math::RoundEvenOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::nearbyint(x); });
      })
      .Case<math::TruncOp>([&](math::TruncOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::trunc(x); });
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
        return binary(o,
                      [](double a, double b) { return std::copysign(a, b); });
      })
      .Case<math::FmaOp>([&](math::FmaOp o) {
        Slot a = slotOf(o.getA()), b = slotOf(o.getB()), c = slotOf(o.getC()),
             d = slotOf(o.getResult());
        out.push_back(
            [a, b, c, d](double *f) { f[d] = std::fma(f[a], f[b], f[c]); });
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
  std::optional<int64_t> points = getNumElementsChecked(
      ArrayRef(plan.extents).take_front(plan.numParallel));
  int64_t numPoints = points.value_or(kMaxElements + 1);
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
      off += evaluateAffine(e, coord) * srcStrides[k];
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
    return func.emitError()
           << "tang-run: @" << func.getSymName() << " has no body";
  if (func.getNumArguments() != inputs.size())
    return func.emitError() << "tang-run: @" << func.getSymName() << " takes "
                            << func.getNumArguments() << " arguments, got "
                            << inputs.size() << " inputs";
  TensorMap tensors;
  for (auto [arg, in] : llvm::zip(func.getArguments(), inputs)) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func.emitError()
             << "tang-run: argument #" << arg.getArgNumber()
             << " must be a ranked tensor, got " << arg.getType();
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
      if (getNumElementsChecked(v.getType().getShape())
              .value_or(kMaxElements + 1) > kMaxElements)
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
    return op.emitError() << "tang-run: unsupported operation '" << op.getName()
                          << "' at function level";
  }
  return func.emitError() << "tang-run: function has no return";
}

//===----------------------------------------------------------------------===//
// Monoid laws
//===----------------------------------------------------------------------===//

namespace {

/// Relative tolerance of the float comparisons in the law checks. Every
/// combine here is a short sum or product of O(1) terms (add: a + b;
/// softmax: l1 * exp(m1 - m) + l2 * exp(m2 - m), weights <= 1; Welford, 2x2
/// matrix products), so the two sides of a law differ by rounding of at most
/// a few units of 2^-53 ~ 1.1e-16 times the magnitude of the terms, which is
/// bounded by the operands' components (sums, weighted sums) or by the result
/// (products). 1e-12 (about 9000 units) leaves three orders of magnitude for
/// that rounding, while a real violation on the O(1) samples (a - b vs b - a,
/// a mean of means) is off by a sizeable fraction of the operands: ten orders
/// of magnitude more. Integer components are compared exactly: wrapping
/// arithmetic is exact.
constexpr double kLawRtol = 1e-12;

/// Deterministic random draws (SplitMix64) for one monoid: the stream is a
/// hash of the monoid's label, so each monoid's samples do not depend on which
/// other monoids are checked.
class LawRng {
public:
  LawRng(uint64_t seed, StringRef stream) {
    uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a
    for (char c : stream)
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    state = seed * 0x2545f4914f6cdd1dULL + h;
  }
  uint64_t next() { return splitMix64(state); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53);
  }
  /// Uniform integer in [lo, hi].
  int64_t integer(int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  /// True with probability 1/n.
  bool oneIn(unsigned n) { return next() % n == 0; }

private:
  uint64_t state;
};

/// A value of integer type of width `w`, uniform over all its bit patterns
/// (held as the signed value; i1 as 0 or 1).
double anyInteger(LawRng &r, unsigned w) {
  uint64_t bits = r.next();
  if (w < 64)
    bits &= (uint64_t(1) << w) - 1;
  return fromBits(bits, w);
}

/// A value for the order-based monoids (max, min, argmax, argmin): often from
/// a small set so that ties happen; floats are sometimes +-inf or NaN, whose
/// handling the laws cover too.
double orderedValue(LawRng &r, Type t) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (isa<FloatType>(t)) {
    if (r.oneIn(16))
      return r.oneIn(2) ? inf : -inf;
    if (r.oneIn(16))
      return NAN;
    if (r.oneIn(2))
      return static_cast<double>(r.integer(-2, 2));
    return r.uniform(-4, 4);
  }
  unsigned w = getBitWidth(t);
  if (w > 1 && r.oneIn(2))
    return static_cast<double>(r.integer(-2, 2));
  return anyInteger(r, w);
}

/// `name (carrier types)`.
std::string getLabel(StringRef name, const MonoidEval &m) {
  std::string label = (name + " (").str();
  llvm::raw_string_ostream os(label);
  llvm::interleaveComma(m.carrierTypes, os);
  return label + ")";
}

/// A monoid whose laws are checked.
struct LawSubject {
  LawSubject(StringRef name, MonoidEval eval, bool commutative, Location loc)
      : label(getLabel(name, eval)), name(name.str()), eval(std::move(eval)),
        commutative(commutative), loc(loc) {}

  /// `add (f64)` or `@welford (f64, f64, f64)`: the monoid and its carrier.
  std::string label;
  /// How diagnostics name it: `add (f64)` or `@welford`.
  std::string name;
  MonoidEval eval;
  bool commutative;
  Location loc;
  /// Builtins: the identity is itself a valid carrier, so combine(e, e) == e
  /// is checked too. User monoids: it need not be in the sampled domain
  /// (Welford's combine divides by n1 + n2, so combine(e, e) is 0/0).
  bool checkIdentityWithItself = false;
  /// Draws a valid carrier.
  std::function<void(LawRng &, double *)> sample;
  /// Maps a carrier to the representative of its class, before comparing;
  /// empty where every carrier is its own class.
  std::function<void(double *)> canonicalize;
};

/// The law subject of builtin monoid `kind` on values of type `t` (with an
/// i32 index for argmax and argmin, values of `t` for online_softmax),
/// compiled by `compiler`.
FailureOr<LawSubject> makeBuiltinSubject(MonoidKind kind, Type t, Location loc,
                                         Compiler &compiler) {
  SmallVector<Type> yields = {t};
  if (kind == MonoidKind::ArgMax || kind == MonoidKind::ArgMin)
    yields.push_back(IntegerType::get(t.getContext(), 32));
  if (kind == MonoidKind::OnlineSoftmax)
    yields.push_back(t);
  FailureOr<MonoidEval> eval = compileBuiltinMonoid(kind, yields, compiler);
  if (failed(eval))
    return failure();
  LawSubject s(stringifyMonoidKind(kind), std::move(*eval),
               /*commutative=*/true, loc);
  s.name = s.label;
  s.checkIdentityWithItself = true;
  unsigned w = isa<FloatType>(t) ? 0 : getBitWidth(t);
  switch (kind) {
  case MonoidKind::Add:
    s.sample = [w](LawRng &r, double *c) {
      // Magnitudes 2^-8 .. 2^8 and both signs: rounding of unequal terms.
      c[0] = w ? anyInteger(r, w)
               : r.uniform(-1, 1) * std::ldexp(1.0, r.integer(-8, 8));
    };
    break;
  case MonoidKind::Mul:
    s.sample = [w](LawRng &r, double *c) {
      c[0] = w ? anyInteger(r, w)
               : (r.oneIn(2) ? -1 : 1) * r.uniform(0.5, 2) *
                     std::ldexp(1.0, r.integer(-4, 4));
    };
    break;
  case MonoidKind::And:
  case MonoidKind::Or:
    s.sample = [w](LawRng &r, double *c) { c[0] = anyInteger(r, w); };
    break;
  case MonoidKind::Max:
  case MonoidKind::Min:
    s.sample = [t](LawRng &r, double *c) { c[0] = orderedValue(r, t); };
    break;
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin:
    // Indices are non-negative integers from a small range, so that equal
    // values with equal or different indices occur.
    s.sample = [t](LawRng &r, double *c) {
      c[0] = orderedValue(r, t);
      c[1] = static_cast<double>(r.integer(0, 7));
    };
    break;
  case MonoidKind::SoftmaxNorm:
  case MonoidKind::OnlineSoftmax: {
    bool online = kind == MonoidKind::OnlineSoftmax;
    SmallVector<double> id = s.eval.identity;
    s.sample = [online, id](LawRng &r, double *c) {
      // The identity (-inf, 0[, 0]) and the lift of a masked score,
      // (-inf, 1[, v]), now and then: the -inf guards.
      if (r.oneIn(8))
        return (void)llvm::copy(id, c);
      if (r.oneIn(8)) {
        c[0] = -std::numeric_limits<double>::infinity();
        c[1] = 1;
        if (online)
          c[2] = r.uniform(-2, 2);
        return;
      }
      // m sometimes equal between samples; l >= 1 because the maximum
      // score of a real carrier contributes exp(0) = 1; |acc| <= l max |v|.
      c[0] =
          r.oneIn(4) ? static_cast<double>(r.integer(-2, 2)) : r.uniform(-4, 4);
      c[1] = r.uniform(1, 8);
      if (online)
        c[2] = c[1] * r.uniform(-2, 2);
    };
    // (m, l[, acc]) stands for the mass l exp(m) (and acc exp(m)): with
    // m = -inf, every finite l and acc is the zero mass, the identity's.
    // NaNs stay, so that a combine that makes them is caught.
    s.canonicalize = [n = s.eval.carrierSize](double *c) {
      if (c[0] != -std::numeric_limits<double>::infinity())
        return;
      if (std::all_of(c + 1, c + n, [](double v) { return std::isfinite(v); }))
        std::fill(c + 1, c + n, 0.0);
    };
    break;
  }
  }
  return s;
}

/// Whether `x` and `y` are the same carrier of `s`'s monoid, after
/// canonicalisation: integer components exactly, float components up to
/// rounding (kLawRtol relative to the larger of them and of `scale`, the
/// operands' largest finite magnitude), NaN equal to NaN.
///
/// For softmax_norm and online_softmax, whose (m, l) stands for the mass
/// l exp(m), the coarser equivalence (m, l) ~ (m', l exp(m - m')) is not
/// used, apart from the zero masses (m = -inf, see canonicalize): it would
/// be wrong for softmax_norm, whose results expose m itself, and it is not
/// needed, since every combine sets m to the maximum of its operands' m,
/// which is exact, associative and commutative: both sides of a law agree on
/// m exactly, and then on l (and acc) up to rounding.
bool sameCarrier(const LawSubject &s, const double *x, const double *y,
                 double scale) {
  const MonoidEval &m = s.eval;
  SmallVector<double, 8> cx(x, x + m.carrierSize), cy(y, y + m.carrierSize);
  if (s.canonicalize) {
    s.canonicalize(cx.data());
    s.canonicalize(cy.data());
  }
  for (unsigned i = 0; i < m.carrierSize; ++i) {
    if (cx[i] == cy[i] || (std::isnan(cx[i]) && std::isnan(cy[i])))
      continue;
    if (!isa<FloatType>(m.carrierTypes[i]) || !std::isfinite(cx[i]) ||
        !std::isfinite(cy[i]))
      return false;
    double tol =
        kLawRtol * std::max({std::fabs(cx[i]), std::fabs(cy[i]), scale});
    if (!(std::fabs(cx[i] - cy[i]) <= tol))
      return false;
  }
  return true;
}

/// The largest finite magnitude of the float components of `carriers`.
double getScale(const MonoidEval &m, ArrayRef<const double *> carriers) {
  double scale = 0;
  for (const double *c : carriers)
    for (unsigned i = 0; i < m.carrierSize; ++i)
      if (isa<FloatType>(m.carrierTypes[i]) && std::isfinite(c[i]))
        scale = std::max(scale, std::fabs(c[i]));
  return scale;
}

/// The shortest decimal form of `v` that reads back as `v`.
std::string formatNumber(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

std::string formatCarrier(const MonoidEval &m, const double *c) {
  std::string s = "(";
  for (unsigned i = 0; i < m.carrierSize; ++i) {
    s += i ? ", " : "";
    // Integer components are exact; the argmax identity's index is +inf.
    if (!isa<FloatType>(m.carrierTypes[i]) && std::isfinite(c[i]))
      s += std::to_string(static_cast<int64_t>(c[i]));
    else
      s += formatNumber(c[i]);
  }
  return s + ")";
}

/// Checks `s` on `numSamples` draws; emits one diagnostic per violated law
/// (its first counterexample) and prints the summary line to `os`.
LogicalResult checkSubject(LawSubject &s, const ErrorState &err,
                           unsigned numSamples, uint64_t seed,
                           raw_ostream &os) {
  const MonoidEval &m = s.eval;
  unsigned n = m.carrierSize;
  LawRng rng(seed, s.label);
  SmallVector<double, 8> a(n), b(n), c(n), ab(n), bc(n), l(n), r(n);
  const double *e = m.identity.data();
  auto fmt = [&](const double *x) { return formatCarrier(m, x); };
  bool associative = true, identity = true, commutative = true;

  if (s.checkIdentityWithItself) {
    m.combine(e, e, l.data());
    if (!sameCarrier(s, l.data(), e, 0)) {
      identity = false;
      emitError(s.loc) << "monoid " << s.name << " has identity e = " << fmt(e)
                       << " but combine(e, e) = " << fmt(l.data()) << " != e";
    }
  }
  for (unsigned k = 0; k < numSamples && !err.op; ++k) {
    s.sample(rng, a.data());
    s.sample(rng, b.data());
    s.sample(rng, c.data());
    double scale = getScale(m, {a.data(), b.data(), c.data()});
    if (associative) {
      m.combine(a.data(), b.data(), ab.data());
      m.combine(ab.data(), c.data(), l.data());
      m.combine(b.data(), c.data(), bc.data());
      m.combine(a.data(), bc.data(), r.data());
      if (!err.op && !sameCarrier(s, l.data(), r.data(), scale)) {
        associative = false;
        emitError(s.loc) << "monoid " << s.name
                         << " is not associative: combine(combine(a, b), c) "
                            "!= combine(a, combine(b, c)) for a = "
                         << fmt(a.data()) << ", b = " << fmt(b.data())
                         << ", c = " << fmt(c.data()) << ": " << fmt(l.data())
                         << " vs " << fmt(r.data());
      }
    }
    if (identity) {
      m.combine(e, a.data(), l.data());
      m.combine(a.data(), e, r.data());
      double idScale = getScale(m, {a.data(), e});
      bool left = sameCarrier(s, l.data(), a.data(), idScale);
      bool right = sameCarrier(s, r.data(), a.data(), idScale);
      if (!err.op && (!left || !right)) {
        identity = false;
        emitError(s.loc) << "monoid " << s.name
                         << " has identity e = " << fmt(e) << " but "
                         << (left ? "combine(a, e)" : "combine(e, a)")
                         << " != a for a = " << fmt(a.data()) << ": "
                         << fmt(left ? r.data() : l.data());
      }
    }
    if (s.commutative && commutative) {
      m.combine(a.data(), b.data(), l.data());
      m.combine(b.data(), a.data(), r.data());
      if (!err.op && !sameCarrier(s, l.data(), r.data(),
                                  getScale(m, {a.data(), b.data()}))) {
        commutative = false;
        emitError(s.loc) << "monoid " << s.name
                         << " is declared commutative but combine(a, b) != "
                            "combine(b, a) for a = "
                         << fmt(a.data()) << ", b = " << fmt(b.data()) << ": "
                         << fmt(l.data()) << " vs " << fmt(r.data());
      }
    }
  }
  if (err.op) {
    err.op->emitError() << "tang-run: " << err.message
                        << " while checking the laws of monoid " << s.name;
    os << "monoid " << s.label << ": combine failed\n";
    os.flush();
    return failure();
  }

  os << "monoid " << s.label << ": ";
  if (associative && identity && commutative) {
    os << (s.commutative ? "associative, identity, commutative"
                         : "associative, identity");
    os << ": ok";
  } else {
    auto status = [](bool ok) { return ok ? "ok" : "violated"; };
    os << "associative: " << status(associative)
       << ", identity: " << status(identity);
    if (s.commutative)
      os << ", commutative: " << status(commutative);
  }
  os << " (" << numSamples << " samples)\n";
  // Diagnostics go to stderr unbuffered: keep the two streams in order.
  os.flush();
  return success(associative && identity && commutative);
}

} // namespace

LogicalResult mlir::tang::checkMonoidLaws(ModuleOp module, raw_ostream &os,
                                          unsigned numSamples, uint64_t seed) {
  MLIRContext *ctx = module.getContext();
  Type f64 = Float64Type::get(ctx), i32 = IntegerType::get(ctx, 32),
       i1 = IntegerType::get(ctx, 1);
  bool ok = true;

  using K = MonoidKind;
  for (uint32_t k = 0; k <= getMaxEnumValForMonoidKind(); ++k) {
    auto kind = static_cast<K>(k);
    SmallVector<Type> types;
    switch (kind) {
    case K::And:
    case K::Or:
      types = {i32, i1};
      break;
    case K::SoftmaxNorm:
    case K::OnlineSoftmax:
      types = {f64};
      break;
    default:
      types = {f64, i32, i1};
      break;
    }
    for (Type t : types) {
      TensorMap noTensors;
      ErrorState err;
      Compiler compiler(noTensors, err);
      FailureOr<LawSubject> s =
          makeBuiltinSubject(kind, t, module.getLoc(), compiler);
      ok &= succeeded(s) &&
            succeeded(checkSubject(*s, err, numSamples, seed, os));
    }
  }

  SmallVector<MonoidOp> monoids;
  module.walk([&](MonoidOp op) { monoids.push_back(op); });
  for (MonoidOp op : monoids) {
    // The compiled combine reports runtime errors (integer division by zero)
    // to `err`; both must outlive the check.
    TensorMap noTensors;
    ErrorState err;
    Compiler compiler(noTensors, err);
    FailureOr<MonoidEval> eval = compiler.compileUserMonoid(op);
    if (failed(eval)) {
      ok = false;
      continue;
    }
    LawSubject s(("@" + op.getSymName()).str(), std::move(*eval),
                 op.getCommutative(), op.getLoc());
    // Each component uniform in [0.25, 2): user carriers are often
    // constrained to be positive (counts, Welford's n and M2, scales), and
    // a combine may divide by them; integer components in [1, 16], i1 in
    // {0, 1}.
    SmallVector<Type> carrierTypes = s.eval.carrierTypes;
    s.sample = [carrierTypes](LawRng &r, double *c) {
      for (auto [i, t] : llvm::enumerate(carrierTypes)) {
        if (isa<FloatType>(t))
          c[i] = r.uniform(0.25, 2);
        else if (t.isInteger(1))
          c[i] = static_cast<double>(r.integer(0, 1));
        else
          c[i] = static_cast<double>(r.integer(1, 16));
      }
    };
    ok &= succeeded(checkSubject(s, err, numSamples, seed, os));
  }
  return success(ok);
}
