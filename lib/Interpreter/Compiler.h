//===- Compiler.h - the interpreter's compiled form -------------*- C++ -*-===//
//
// What the interpreter's parts share (lib/Interpreter only): held integer
// values, the compiled form of a comprehension (closures over a frame of
// slots), monoids as the interpreter evaluates them, and the compiler that
// makes them (Compiler.cpp). Interpreter.cpp runs functions with it,
// MonoidLaws.cpp checks monoid laws on it.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_INTERPRETER_COMPILER_H
#define TANG_LIB_INTERPRETER_COMPILER_H

#include "Tang/Dialect/Tang/IR/TangMonoids.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Dialect/Tang/IR/TangSizes.h"
#include "Tang/Interpreter/Tensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <memory>
#include <optional>

namespace mlir::tang::interp {

//===----------------------------------------------------------------------===//
// Integer helpers
//===----------------------------------------------------------------------===//

inline unsigned getBitWidth(Type t) {
  t = getElementTypeOrSelf(t);
  if (t.isIndex())
    return 64;
  return t.getIntOrFloatBitWidth();
}

/// The two's-complement bits of a held integer value.
inline uint64_t toBits(double v, unsigned width) {
  if (width == 1)
    return static_cast<uint64_t>(v != 0);
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}
inline int64_t toSigned(double v, unsigned width) {
  uint64_t bits = toBits(v, width);
  if (width >= 64)
    return static_cast<int64_t>(bits);
  uint64_t sign = uint64_t(1) << (width - 1);
  bits &= (sign << 1) - 1;
  return static_cast<int64_t>((bits ^ sign) - sign);
}
inline uint64_t toUnsigned(double v, unsigned width) {
  uint64_t bits = toBits(v, width);
  return width >= 64 ? bits : bits & ((uint64_t(1) << width) - 1);
}
/// Wraps two's-complement `bits` to `width` and returns the held value.
inline double fromBits(uint64_t bits, unsigned width) {
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

//===----------------------------------------------------------------------===//
// The precision emulator's roundings
//===----------------------------------------------------------------------===//

/// A rounding of the precision emulator (InterpretOptions).
enum class Rounding { None, F32, BF16, F16, TF32 };

/// `v` rounded to nearest-even in `r` (through f32 first, as a kernel's f32
/// value is stored; NaN and infinities kept; tf32 rounds to nearest, ties
/// away, as cvt.rna).
double roundValue(double v, Rounding r);

/// The rounding to element type `t`: f32, bf16, f16; None for f64 and
/// integers.
Rounding getRounding(Type t);

/// What a run under the precision emulator rounds beyond the schedules'
/// orders (set per function-level comprehension).
struct Precision {
  /// Reads of f32 tensors are tensor-core operands, rounded to tf32.
  bool tf32Operands = false;
  /// The order of reductions nested in the comprehension (Plan's partials
  /// and vector): a row kernel's threads stride them.
  int64_t nestedPartials = 1, nestedVector = 1;
};

/// Monte Carlo arithmetic (InterpretOptions::perturbSeed): rounding errors
/// as independent random relative errors. Each perturbed value v becomes
/// v (1 + u xi), xi uniform on [-1, 1), u the unit roundoff the value would
/// be rounded with, from one deterministic stream (splitmix64) per run.
class Perturbation {
public:
  explicit Perturbation(uint64_t seed) : state(seed) {}
  double apply(double v, double u) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    // 53 random bits as a fraction in [0, 1), then [-1, 1).
    double xi = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
    return v * (1.0 + u * xi);
  }

private:
  uint64_t state;
};

/// The unit roundoff of a value of element type `t` as a kernel stores it
/// (f32 2^-24, bf16 2^-8, f16 2^-11, f64 2^-53; 0 for integers).
double getUnitRoundoff(Type t);

/// A compiled comprehension body.
struct Plan {
  SmallVector<Slot> indexSlots;
  SmallVector<int64_t> extents;
  unsigned numParallel = 0;
  std::vector<Instr> body;
  SmallVector<Slot> yieldSlots;
  std::optional<MonoidEval> monoid; // None: a map.
  unsigned numResults = 0;

  /// The precision emulator: the carrier's float components rounded to
  /// this after every combine (the accumulator type), ...
  Rounding carrierRounding = Rounding::None;
  /// ... and the reduction's order: the reduced points (row-major) dealt
  /// to `partials` accumulators in runs of `vector` (a block's threads
  /// striding the row), the partials then combined pairwise as a warp's
  /// butterfly does (p with p + n/2, ...); or in blocked chunks of `chunk`
  /// points (splits), combined in order, each chunk (with `subChunk`) in
  /// runs of `subChunk` points from its start (a column kernel's warps),
  /// the runs combined in order into their chunk's carrier.
  int64_t partials = 1, vector = 1, chunk = 0, subChunk = 0;

  void roundCarrier(double *acc) const {
    if (carrierRounding == Rounding::None)
      return;
    for (auto [k, t] : llvm::enumerate(monoid->carrierTypes))
      if (isa<FloatType>(t))
        acc[k] = roundValue(acc[k], carrierRounding);
  }

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
    unsigned size = monoid->carrierSize;
    bool ordered = partials > 1 || chunk > 0;
    int64_t runsPerChunk = subChunk ? llvm::divideCeil(chunk, subChunk) : 1;
    // One carrier, or (ordered) one per partial or chunk.
    SmallVector<double, 8> accs(size), scratch(size), yields(yieldSlots.size());
    monoid->init(accs.data());
    int64_t position = 0;
    unsigned numReduced = extents.size() - numParallel;
    SmallVector<int64_t, 4> idx(numReduced, 0);
    for (unsigned r = 0; r < numReduced; ++r)
      frame[indexSlots[numParallel + r]] = 0;
    while (true) {
      for (const Instr &i : body)
        i(frame);
      for (auto [k, s] : llvm::enumerate(yieldSlots))
        yields[k] = frame[s];
      int64_t part = !ordered   ? 0
                     : subChunk ? position / chunk * runsPerChunk +
                                      position % chunk / subChunk
                     : chunk    ? position / chunk
                                : (position / vector) % partials;
      ++position;
      if (static_cast<size_t>((part + 1) * size) > accs.size()) {
        size_t from = accs.size();
        accs.resize((part + 1) * size);
        for (size_t at = from; at < accs.size(); at += size)
          monoid->init(accs.data() + at);
      }
      double *acc = accs.data() + part * size;
      monoid->accumulate(acc, yields.data(), scratch.data());
      roundCarrier(acc);
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
    int64_t n = accs.size() / size;
    if (ordered && subChunk) {
      // Each chunk's runs into the chunk's first, then the chunks' firsts
      // into the first, each in order.
      for (int64_t c = 0; c * runsPerChunk < n; ++c) {
        double *head = accs.data() + c * runsPerChunk * size;
        for (int64_t r = 1; r < runsPerChunk && c * runsPerChunk + r < n; ++r) {
          monoid->combine(head, head + r * size, head);
          roundCarrier(head);
        }
        if (c > 0) {
          monoid->combine(accs.data(), head, accs.data());
          roundCarrier(accs.data());
        }
      }
    } else if (ordered && chunk) {
      for (int64_t p = 1; p < n; ++p) {
        monoid->combine(accs.data(), accs.data() + p * size, accs.data());
        roundCarrier(accs.data());
      }
    } else if (ordered) {
      // The butterfly: partial p takes p + half, halving.
      accs.resize(llvm::PowerOf2Ceil(n) * size);
      for (int64_t p = n; p < int64_t(accs.size() / size); ++p)
        monoid->init(accs.data() + p * size);
      for (int64_t half = accs.size() / size / 2; half >= 1; half /= 2)
        for (int64_t p = 0; p < half; ++p) {
          double *a = accs.data() + p * size;
          monoid->combine(a, accs.data() + (p + half) * size, a);
          roundCarrier(a);
        }
    }
    monoid->finalize(accs.data(), results);
  }
};

inline int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

using TensorMap = llvm::DenseMap<Value, std::shared_ptr<Tensor>>;

/// The held value of a scalar `arith.constant`.
inline std::optional<double> getScalarConstant(Value v) {
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
  /// `sizes`: the values of the function's size symbols (TangSizes.h).
  Compiler(const TensorMap &tensors, ErrorState &err,
           ArrayRef<int64_t> sizes = {}, const Precision *precision = nullptr)
      : tensors(tensors), err(err), sizes(sizes), precision(precision) {}

  /// Monte Carlo arithmetic: every rounding arithmetic result compiled
  /// from here on (here and in the blocks compileFunction compiles) is
  /// perturbed by `p`.
  void setPerturbation(std::shared_ptr<Perturbation> p) {
    perturbation = std::move(p);
  }

  unsigned getNumSlots() const { return numSlots; }
  Slot slotOf(Value v) {
    auto [it, inserted] = slots.try_emplace(v, numSlots);
    if (inserted)
      ++numSlots;
    return it->second;
  }

  FailureOr<std::shared_ptr<Plan>> compileComprehension(ComprehensionOp op);
  /// The body of a comprehension or a scan: `extents` per block argument
  /// (the first `numParallel` parallel), its yields, `monoid` if any.
  FailureOr<std::shared_ptr<Plan>>
  compileYieldingBody(Operation *op, unsigned numParallel,
                      ArrayRef<int64_t> extents, Block &body, Attribute monoid,
                      unsigned numResults);
  /// A scan's body: a plan whose last index is the scan index (run by
  /// evalScan in Interpreter.cpp, not by Plan::evalPoint).
  FailureOr<std::shared_ptr<Plan>> compileScan(ScanOp op);
  /// A scatter's body as a map (its plan yields the value written), the
  /// slots of its put's coordinate operands, and its monoid if it has one.
  FailureOr<std::shared_ptr<Plan>>
  compileScatter(ScatterOp op, SmallVectorImpl<Slot> &coordinateSlots,
                 std::optional<MonoidEval> &combine);
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
  /// The math dialect's ops (CompilerMath.cpp); an error for any other op.
  LogicalResult compileMathOp(Operation *op, std::vector<Instr> &out);
  /// `res` = fn(`in`), and `o`'s result = fn(its two operands).
  LogicalResult emitUnary(Value in, Value res, double (*fn)(double),
                          std::vector<Instr> &out);
  LogicalResult emitBinary(Operation *o, double (*fn)(double, double),
                           std::vector<Instr> &out);
  /// The function-level tensor `tensor` that `reader` reads, or an error.
  FailureOr<std::shared_ptr<Tensor>> lookupTensor(Operation *reader,
                                                  Value tensor);
  LogicalResult compileRead(ReadOp op, std::vector<Instr> &out);
  /// A gather: its coordinates evaluated per point, checked by its policy.
  LogicalResult compileGather(GatherOp op, std::vector<Instr> &out);
  /// The slots of the enclosing values a nested comprehension depends on:
  /// indices, and other scalars of the enclosing body.
  struct MemoKey {
    SmallVector<Slot> indices, scalars;
  };
  MemoKey getMemoKey(ComprehensionOp c);
  /// Under the precision emulator: rounds `op`'s float results as a kernel
  /// holds them (f32 arithmetic, f16/bf16 too: a truncf to them is no
  /// rounding; tf32 operands).
  void appendRoundings(Operation *op, std::vector<Instr> &out);
  /// Under Monte Carlo arithmetic: perturbs `op`'s float results where a
  /// kernel would round them (arithmetic and math functions in f32, f64 kept
  /// in f64; a truncf at f32's; not reads, selects, min/max, negation).
  void appendPerturbations(Operation *op, std::vector<Instr> &out);
  /// Makes `v` (operand #operandNo of `user`) available in a slot: computed
  /// earlier, or a function-level scalar constant loaded by a new instr.
  LogicalResult ensureAvailable(Operation *user, Value v, unsigned operandNo,
                                std::vector<Instr> &out);
  /// `monoid` (a builtin or a symbol) named by `op`, over `yieldTypes`.
  FailureOr<MonoidEval> compileMonoid(Operation *op, Attribute monoid,
                                      TypeRange yieldTypes);

  /// The value of a function-level scalar: a constant, or a size.
  std::optional<double> getFunctionScalar(Value v);
  /// The extents of `op`'s indices, symbolic ones evaluated at `sizes`.
  SmallVector<int64_t> getExtents(ComprehensionOp op);

  const TensorMap &tensors;
  ErrorState &err;
  SmallVector<int64_t> sizes;
  llvm::DenseMap<Value, Slot> slots;
  unsigned numSlots = 0;
  const Precision *precision;
  std::shared_ptr<Perturbation> perturbation;
};

/// The value of a constant attribute as the interpreter holds it (i1 as 0
/// or 1).
double attrToDouble(Attribute a);

/// The builtin monoid `kind` on a body's yields of `yieldTypes`, evaluated
/// from the IR that defines it (TangMonoids.h): the same lift, combine,
/// accumulate and finalise the kernels run, in float64.
FailureOr<MonoidEval>
compileBuiltinMonoid(MonoidKind kind, TypeRange yieldTypes, Compiler &compiler);

} // namespace mlir::tang::interp

#endif // TANG_LIB_INTERPRETER_COMPILER_H
