//===- TrafficBound.cpp - traffic lower bounds as an LP ---------*- C++ -*-===//
//
// See TrafficBound.h. GLPK solves the two LPs in floating point; the dual
// is rounded to small rationals (made feasible again if rounding broke a
// constraint) and the tile to integers (shrunk until every footprint fits),
// then both are checked exactly with GMP.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/TrafficBound.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <glpk.h>
#include <gmp.h>

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::tang;

FailureOr<LoopNest> mlir::tang::getLoopNest(ComprehensionOp op,
                                            std::string &why) {
  LoopNest nest;
  for (unsigned j = 0; j < op.getNumIndices(); ++j)
    nest.extents.push_back(op.getExtent(j));
  int64_t bytes = std::numeric_limits<int64_t>::max();
  auto elementBytes = [](Type t) -> int64_t {
    return std::max<int64_t>(
        1, getElementTypeOrSelf(t).getIntOrFloatBitWidth() / 8);
  };
  bool nested = false;
  op.getBodyBlock().walk([&](ComprehensionOp) { nested = true; });
  if (nested) {
    why = "its body holds a nested comprehension (fused reductions are not "
          "expressed as one loop nest yet)";
    return failure();
  }
  for (Operation &access : op.getBodyBlock()) {
    // Reads and gathers. A gather's data coordinates (symbols) are not
    // projections: left out like those below, it still touches at least
    // one element per value of its other coordinates.
    auto read = dyn_cast<ReadOp>(access);
    auto gather = dyn_cast<GatherOp>(access);
    if (!read && !gather)
      continue;
    // Through views to the tensor the elements live in: a view's elements
    // alias its source's, so footprints count the source's.
    Value tensor = read ? read.getTensor() : gather.getTensor();
    AffineMap map = read ? read.getMap() : gather.getMap();
    ValueRange indices = read ? read.getIndices() : gather.getIndices();
    bool padded = read && read.getFill();
    while (auto view = tensor.getDefiningOp<ViewOp>()) {
      map = view.getMap().compose(map);
      tensor = view.getSource();
    }
    SmallVector<unsigned> support;
    SmallVector<std::string> dropped;
    for (AffineExpr e : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || padded) {
        // Not a projection (or padded: an index may run past the tensor):
        // the coordinate is left out (see LoopNest::relaxed).
        // Printed over the comprehension's indices (d<position>; a
        // gather's data as s<k>).
        SmallVector<AffineExpr> byPosition;
        for (Value v : indices)
          byPosition.push_back(getAffineDimExpr(
              cast<BlockArgument>(v).getArgNumber(), op.getContext()));
        std::string s;
        llvm::raw_string_ostream os(s);
        e.replaceDims(byPosition).print(os);
        dropped.push_back(s);
        continue;
      }
      auto arg = cast<BlockArgument>(indices[dim.getPosition()]);
      if (!llvm::is_contained(support, arg.getArgNumber()))
        support.push_back(arg.getArgNumber());
    }
    llvm::sort(support);
    nest.supports.push_back(support);
    std::string name;
    llvm::raw_string_ostream os(name);
    tensor.printAsOperand(os, OpPrintingFlags());
    nest.names.push_back(name);
    if (!dropped.empty())
      nest.relaxed.push_back(name + " (coordinates " +
                             llvm::join(dropped, ", ") + ")");
    bytes = std::min(bytes, elementBytes(access.getResult(0).getType()));
  }
  // The result: the parallel indices.
  SmallVector<unsigned> result;
  for (unsigned j = 0; j < op.getNumParallel(); ++j)
    result.push_back(j);
  nest.supports.push_back(result);
  nest.names.push_back("the result");
  for (Type t : op.getResultTypes())
    bytes = std::min(bytes, elementBytes(t));
  nest.elementBytes = bytes;
  return nest;
}

namespace {

/// The closest fraction to `v` with a denominator up to `maxDen`
/// (continued fractions).
Fraction rationalize(double v, int64_t maxDen = 1000) {
  if (v <= 0)
    return {0, 1};
  int64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;
  double x = v;
  for (int i = 0; i < 40; ++i) {
    double a = std::floor(x);
    int64_t ai = static_cast<int64_t>(a);
    int64_t h2 = ai * h1 + h0, k2 = ai * k1 + k0;
    if (k2 > maxDen)
      break;
    h0 = h1, h1 = h2, k0 = k1, k1 = k2;
    if (std::abs(x - a) < 1e-12)
      break;
    x = 1.0 / (x - a);
  }
  return {h1, k1};
}

/// Solves max/min c.x s.t. rows (coefficients over columns) <= / >= bounds
/// and column bounds, with GLPK's simplex; returns the column values.
FailureOr<SmallVector<double>>
solveLP(bool maximise, ArrayRef<double> cost,
        ArrayRef<SmallVector<std::pair<unsigned, double>>> rows,
        ArrayRef<double> rowBound, bool rowsAreUpper,
        ArrayRef<std::optional<double>> upper, std::string &why) {
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, maximise ? GLP_MAX : GLP_MIN);
  glp_add_cols(lp, cost.size());
  for (auto [j, c] : llvm::enumerate(cost)) {
    glp_set_obj_coef(lp, j + 1, c);
    if (upper[j] && *upper[j] <= 0.0)
      glp_set_col_bnds(lp, j + 1, GLP_FX, 0.0, 0.0); // an extent of 1
    else if (upper[j])
      glp_set_col_bnds(lp, j + 1, GLP_DB, 0.0, *upper[j]);
    else
      glp_set_col_bnds(lp, j + 1, GLP_LO, 0.0, 0.0);
  }
  glp_add_rows(lp, rows.size());
  for (auto [i, row] : llvm::enumerate(rows)) {
    glp_set_row_bnds(lp, i + 1, rowsAreUpper ? GLP_UP : GLP_LO, rowBound[i],
                     rowBound[i]);
    SmallVector<int> idx{0};
    SmallVector<double> val{0.0};
    for (auto [col, v] : row) {
      idx.push_back(col + 1);
      val.push_back(v);
    }
    glp_set_mat_row(lp, i + 1, row.size(), idx.data(), val.data());
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  int rc = glp_simplex(lp, &parm);
  if (rc != 0 || glp_get_status(lp) != GLP_OPT) {
    why = llvm::formatv("GLPK's simplex did not reach an optimum (return "
                        "code {0}, status {1})",
                        rc, glp_get_status(lp))
              .str();
    glp_delete_prob(lp);
    return failure();
  }
  SmallVector<double> x;
  for (size_t j = 0; j < cost.size(); ++j)
    x.push_back(glp_get_col_prim(lp, j + 1));
  glp_delete_prob(lp);
  return x;
}

/// A GMP integer with RAII.
struct BigInt {
  mpz_t v;
  BigInt(int64_t x = 0) { mpz_init_set_si(v, x); }
  ~BigInt() { mpz_clear(v); }
  BigInt(const BigInt &) = delete;
  BigInt &operator=(const BigInt &) = delete;
};

} // namespace

std::string mlir::tang::checkCertificate(const LoopNest &nest,
                                         const TrafficBound &bound) {
  size_t d = nest.extents.size(), n = nest.supports.size();
  if (bound.tile.size() != d || bound.t.size() != d || bound.s.size() != n)
    return "the certificate's sizes do not match the loop nest";
  // The tile: 1 <= b_j <= L_j, every footprint at most M.
  for (size_t j = 0; j < d; ++j)
    if (bound.tile[j] < 1 || bound.tile[j] > nest.extents[j])
      return llvm::formatv("tile size {0} of index {1} is outside [1, {2}]",
                           bound.tile[j], j, nest.extents[j])
          .str();
  for (size_t a = 0; a < n; ++a) {
    BigInt footprint(1);
    for (unsigned j : nest.supports[a])
      mpz_mul_si(footprint.v, footprint.v, bound.tile[j]);
    if (mpz_cmp_si(footprint.v, bound.capacity) > 0)
      return llvm::formatv("the tile's footprint in {0} exceeds M = {1}",
                           nest.names[a], bound.capacity)
          .str();
  }
  // The dual: s, t >= 0 and, for every index, sum_{a covers j} s_a + t_j >= 1,
  // in rationals.
  mpq_t sum, term, one;
  mpq_inits(sum, term, one, nullptr);
  mpq_set_ui(one, 1, 1);
  std::string error;
  for (const Fraction &f : llvm::concat<const Fraction>(bound.s, bound.t))
    if (f.num < 0 || f.den <= 0)
      error = "a dual value is negative or has a non-positive denominator";
  for (size_t j = 0; j < d && error.empty(); ++j) {
    mpq_set_si(sum, bound.t[j].num, bound.t[j].den);
    mpq_canonicalize(sum);
    for (size_t a = 0; a < n; ++a)
      if (llvm::is_contained(nest.supports[a], j)) {
        mpq_set_si(term, bound.s[a].num, bound.s[a].den);
        mpq_canonicalize(term);
        mpq_add(sum, sum, term);
      }
    if (mpq_cmp(sum, one) < 0)
      error = llvm::formatv("the dual does not cover index {0}: its weights "
                            "sum to less than 1",
                            j)
                  .str();
  }
  mpq_clears(sum, term, one, nullptr);
  if (!error.empty())
    return error;
  // Weak duality: prod b_j <= M^{sum s} prod L_j^{t_j}, raised to the power
  // q (the common denominator) so that every exponent is an integer.
  int64_t q = 1;
  for (const Fraction &f : llvm::concat<const Fraction>(bound.s, bound.t))
    q = std::lcm(q, f.den);
  int64_t sNum = 0; // q * sum s
  for (const Fraction &f : bound.s)
    sNum += f.num * (q / f.den);
  BigInt lhs(1), rhs(1), power;
  for (int64_t b : bound.tile)
    mpz_mul_si(lhs.v, lhs.v, b);
  mpz_pow_ui(lhs.v, lhs.v, q);
  mpz_ui_pow_ui(rhs.v, bound.capacity, sNum);
  for (size_t j = 0; j < d; ++j) {
    mpz_ui_pow_ui(power.v, nest.extents[j],
                  bound.t[j].num * (q / bound.t[j].den));
    mpz_mul(rhs.v, rhs.v, power.v);
  }
  if (mpz_cmp(lhs.v, rhs.v) > 0)
    return "weak duality fails: the tile runs more iterations than the dual "
           "bound allows";
  return "";
}

FailureOr<TrafficBound> mlir::tang::computeTrafficBound(const LoopNest &nest,
                                                        int64_t capacity,
                                                        std::string &why) {
  if (capacity < 2) {
    why = "the fast memory holds fewer than 2 elements";
    return failure();
  }
  size_t d = nest.extents.size(), n = nest.supports.size();
  double logM = std::log(double(capacity));
  SmallVector<double> lambda;
  for (int64_t e : nest.extents)
    lambda.push_back(std::log(double(std::max<int64_t>(e, 1))) / logM);

  // Primal: maximise sum x_j, footprints sum_{j in S_a} x_j <= 1,
  // 0 <= x_j <= lambda_j.
  SmallVector<SmallVector<std::pair<unsigned, double>>> rows;
  for (const auto &support : nest.supports) {
    SmallVector<std::pair<unsigned, double>> row;
    for (unsigned j : support)
      row.emplace_back(j, 1.0);
    rows.push_back(row);
  }
  SmallVector<std::optional<double>> upper(lambda.begin(), lambda.end());
  FailureOr<SmallVector<double>> x =
      solveLP(/*maximise=*/true, SmallVector<double>(d, 1.0), rows,
              SmallVector<double>(n, 1.0), /*rowsAreUpper=*/true, upper, why);
  if (failed(x))
    return failure();

  // Dual: minimise sum s_a + sum lambda_j t_j, every index covered.
  SmallVector<double> cost(n, 1.0);
  cost.append(lambda);
  SmallVector<SmallVector<std::pair<unsigned, double>>> cover(d);
  for (size_t a = 0; a < n; ++a)
    for (unsigned j : nest.supports[a])
      cover[j].emplace_back(a, 1.0);
  for (size_t j = 0; j < d; ++j)
    cover[j].emplace_back(n + j, 1.0);
  FailureOr<SmallVector<double>> y =
      solveLP(/*maximise=*/false, cost, cover, SmallVector<double>(d, 1.0),
              /*rowsAreUpper=*/false,
              SmallVector<std::optional<double>>(n + d, std::nullopt), why);
  if (failed(y))
    return failure();

  TrafficBound bound;
  bound.capacity = capacity;
  bound.tileExponents = *x;
  bound.kappa = 0;
  for (double v : *x)
    bound.kappa += v;
  // The dual in small rationals; rounding may break a cover constraint:
  // t_j makes up what is missing (a feasible, slightly weaker bound).
  for (size_t a = 0; a < n; ++a)
    bound.s.push_back(rationalize((*y)[a]));
  for (size_t j = 0; j < d; ++j) {
    Fraction t = rationalize((*y)[n + j]);
    double covered = t.value();
    for (size_t a = 0; a < n; ++a)
      if (llvm::is_contained(nest.supports[a], j))
        covered += bound.s[a].value();
    if (covered < 1.0 - 1e-12 || t.num < 0) {
      // Exactly: t_j = 1 - sum s (over a common denominator).
      int64_t q = 1;
      for (size_t a = 0; a < n; ++a)
        q = std::lcm(q, bound.s[a].den);
      int64_t num = q;
      for (size_t a = 0; a < n; ++a)
        if (llvm::is_contained(nest.supports[a], j))
          num -= bound.s[a].num * (q / bound.s[a].den);
      Fraction need{std::max<int64_t>(num, 0), q};
      if (need.value() > t.value())
        t = need;
    }
    bound.t.push_back(t);
  }
  // The tile: b_j = floor(M^{x_j}), shrunk until every footprint fits.
  for (size_t j = 0; j < d; ++j) {
    double b = std::floor(std::exp((*x)[j] * logM) * (1 + 1e-12));
    bound.tile.push_back(
        std::clamp<int64_t>(static_cast<int64_t>(b), 1, nest.extents[j]));
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &support : nest.supports) {
      double footprint = 1;
      for (unsigned j : support)
        footprint *= double(bound.tile[j]);
      if (footprint <= double(capacity))
        continue;
      unsigned widest = support.front();
      for (unsigned j : support)
        if (bound.tile[j] > bound.tile[widest])
          widest = j;
      --bound.tile[widest];
      changed = true;
    }
  }
  std::string error = checkCertificate(nest, bound);
  if (!error.empty()) {
    why = "the certificate does not check: " + error;
    return failure();
  }
  // F = (2M)^{sum s} prod L_j^{t_j}; words >= M (ceil(N / F) - 1).
  double logF = 0, logN = 0;
  for (const Fraction &f : bound.s)
    logF += f.value() * std::log(2.0 * double(capacity));
  for (size_t j = 0; j < d; ++j) {
    logF += bound.t[j].value() * std::log(double(nest.extents[j]));
    logN += std::log(double(nest.extents[j]));
  }
  // Rounded towards a smaller bound.
  bound.iterationsPerSegment = std::exp(logF) * (1 + 1e-9);
  double segments = std::ceil(std::exp(logN) / bound.iterationsPerSegment);
  bound.words = std::max(0.0, double(capacity) * (segments - 1));
  return bound;
}
