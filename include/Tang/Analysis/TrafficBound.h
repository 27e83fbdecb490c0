//===- TrafficBound.h - traffic lower bounds as an LP -----------*- C++ -*-===//
//
// A lower bound on the words a comprehension must move between a fast
// memory of M words and the slower one, for any order and tiling of its
// iterations (the Hoelder-Brascamp-Lieb line of work; Dinh & Demmel 2020
// for loop nests with arbitrary bounds), with a certificate checked in
// exact arithmetic.
//
// The comprehension is a loop nest over its indices j (extents L_j). Each
// access a (a read, or the result) touches the elements of a projection
// onto the indices S_a its coordinates use. Any set E of iterations
// satisfies, for every (s, t) >= 0 with sum_{a : j in S_a} s_a + t_j >= 1
// for every j,
//     |E| <= prod_a |phi_a(E)|^{s_a} prod_j L_j^{t_j},
// so a stretch of execution that touches at most 2M elements of each
// access runs at most F = (2M)^{sum s} prod L_j^{t_j} iterations, and the
// N = prod L_j iterations need at least M (ceil(N / F) - 1) words moved.
// The best (s, t) solves the LP
//     minimise sum_a s_a + sum_j t_j log_M L_j   (the dual)
// whose dual is
//     maximise sum_j x_j  s.t.  sum_{j in S_a} x_j <= 1,  0 <= x_j <= log_M L_j
// (the primal: x_j = log_M b_j, a tile b whose every footprint fits in M).
// Both are solved with GLPK; the certificate is an integer tile b and a
// rational (s, t), checked exactly: every footprint of b is at most M, the
// (s, t) constraints hold, and prod b_j <= M^{sum s} prod L_j^{t_j} (weak
// duality, raised to the common denominator's power, in big integers).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_ANALYSIS_TRAFFICBOUND_H
#define TANG_ANALYSIS_TRAFFICBOUND_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include <string>
#include <utility>

namespace mlir::tang {

/// A rational number num / den, den > 0.
struct Fraction {
  int64_t num = 0, den = 1;
  double value() const { return double(num) / double(den); }
};

/// The loop nest of a comprehension as the LP sees it.
struct LoopNest {
  /// Per index: its extent.
  SmallVector<int64_t> extents;
  /// Per access: the indices its coordinates use, and a name for messages.
  SmallVector<SmallVector<unsigned>> supports;
  SmallVector<std::string> names;
  /// The smallest element size of the accesses, in bytes.
  int64_t elementBytes = 4;
  /// Accesses with coordinates that are not single indices (sliding
  /// windows `x[i + r]`, strides, reshapes), described: the LP sees each
  /// through its single-index coordinates only. Distinct values of those
  /// coordinates are distinct elements, so such an access touches at least
  /// as many elements as its relaxed support says: the bound stays a valid
  /// lower bound, possibly weaker than the exact one (and the tile's
  /// footprint in such an access is not checked).
  SmallVector<std::string> relaxed;
};

/// A bound at one memory level, with its certificate.
struct TrafficBound {
  /// The fast memory's capacity, in elements.
  int64_t capacity = 0;
  /// The LP's optimum: log_M of the largest tile (iterations) whose
  /// footprints fit in M.
  double kappa = 0;
  /// The primal solution x_j and the certified integer tile b_j.
  SmallVector<double> tileExponents;
  SmallVector<int64_t> tile;
  /// The certified dual (s per access, t per index).
  SmallVector<Fraction> s, t;
  /// Iterations one stretch touching at most 2M elements of each access can
  /// run (upper bound), and the lower bound on words moved.
  double iterationsPerSegment = 0;
  double words = 0;
};

/// The loop nest of `op`, or a reason it has none the LP can express
/// (nested comprehensions, coordinates that are not single indices).
FailureOr<LoopNest> getLoopNest(ComprehensionOp op, std::string &why);

/// Solves both LPs for a fast memory of `capacity` elements and certifies
/// the result; fails with `why` when GLPK fails or a check does not hold.
FailureOr<TrafficBound> computeTrafficBound(const LoopNest &nest,
                                            int64_t capacity, std::string &why);

/// The exact checks of a bound's certificate (see the file comment);
/// returns an empty string, or what does not hold.
std::string checkCertificate(const LoopNest &nest, const TrafficBound &bound);

} // namespace mlir::tang

#endif // TANG_ANALYSIS_TRAFFICBOUND_H
