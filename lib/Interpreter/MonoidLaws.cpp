//===- MonoidLaws.cpp - checking monoid laws on samples ---------*- C++ -*-===//
//
// tang-run --check-monoid-laws: associativity, identity and (where
// declared) commutativity of every builtin monoid and every tang.monoid,
// on random samples, checked on the very closures the interpreter reduces
// with (Compiler.h).
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Interpreter.h"

#include "Compiler.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::interp;

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
