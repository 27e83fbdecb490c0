//===- AttentionMatchers.h - attention-shaped reductions --------*- C++ -*-===//
//
// Matchers of the comprehensions the attention kernels take, keyed on the
// graph, never on a name: an online-softmax reduction whose scores are a
// scaled (and possibly masked) dot product (flash attention), and a
// reduction over keys of dot-product scores (attention's gradients and
// saved statistics, as --tang-grad derives them). The kernel patterns
// (lib/Conversion/TangToGPU) build what these match.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_ANALYSIS_ATTENTIONMATCHERS_H
#define TANG_ANALYSIS_ATTENTIONMATCHERS_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include <optional>
#include <string>

namespace mlir::tang {

/// The pieces of an attention-shaped online-softmax reduction.
struct FlashMatch {
  ComprehensionOp red; // The nested dot product over e.
  ReadOp q, k, v;
  unsigned i, d; // Query and value-column indices (parallel).
  Value j;       // The key index (the op's reduced index).
  /// Body operations of `red` that do not depend on e: constant factors of
  /// the summand, computed once.
  SmallVector<Value> factors;
  /// Body operations of the op computing the score from red's result.
  SmallVector<Operation *> scoreOps;
  Value score;
  Type elementType;
  int64_t lq, lk, dqk, dv;
  /// If the score is select(j + a <= i + b, x, -inf) (a causal or banded
  /// mask, any equivalent comparison), c = b - a: keys past i + c are
  /// masked, and key tiles wholly past a query tile are skipped.
  std::optional<int64_t> keyLimit;
  /// With keyLimit: the comparison j + a <= i + b of the mask (true on key
  /// tiles wholly at or before a query tile's first row + c).
  Operation *maskCondition = nullptr;
};

/// `op` as a flash-attention reduction: an online_softmax reduction over
/// one key index whose score is a (scaled, possibly masked) dot product of
/// two reads and whose value is a read; std::nullopt with `why` set
/// otherwise. For tensor cores (`tensorCores`) the three reads are of one
/// 16-bit type and the head dimensions multiples of 64 up to 256; for the
/// SIMT kernel (SimtScoreKernel.cpp) any float types and head dimensions
/// up to 256.
std::optional<FlashMatch> matchFlash(ComprehensionOp op, std::string &why,
                                     bool tensorCores = true);

/// One dot product of the body: sum_e a[.., x, e] b[.., y, e] times
/// constant factors.
struct ScoreDot {
  ComprehensionOp red;
  ReadOp a, b;
  SmallVector<Value> factors;
};

/// The pieces of a reduction over keys of dot-product scores.
struct ScoreMatch {
  SmallVector<ScoreDot, 2> dots;
  MonoidKind monoid;
  unsigned x; // The row index (parallel).
  /// With add: the output's column index (the last parallel one) and the
  /// read W[.., y, c] the per-element value multiplies.
  std::optional<unsigned> c;
  ReadOp w;
  Value y; // The key index (the op's reduced index).
  /// The per-element value g and the body operations computing it (not
  /// the dot products, not W's chain).
  Value g;
  SmallVector<Operation *> scoreOps;
  Type elementType;
  int64_t lx, ly, dc = 0;
  /// A causal-type mask select(y + a <= x + b, s, -inf) among the score
  /// code, with g vanishing (add) or -inf (softmax_norm) where it masks:
  /// keys past x + keysUpTo (dQ), or before x - keysFrom (dK, dV, where the
  /// rows are keys and y the queries), contribute nothing, and key tiles
  /// wholly there are skipped.
  std::optional<int64_t> keysUpTo, keysFrom;
  /// With a key limit: the mask's comparison, true on key tiles wholly
  /// inside the kept region (those run without it: the causal backward
  /// 6-40% faster on the H200 at L >= 2048, 8% slower at L 512 head 128;
  /// bench/results/2026-12-01-h200-attention-grad.md).
  Operation *maskCondition = nullptr;
};

/// `op` as a reduction over keys of dot-product scores: an add (or
/// softmax_norm) reduction over one key index whose body computes scores
/// from one or two nested dot products of reads; std::nullopt with `why`
/// set otherwise. For tensor cores (`tensorCores`) the reads are of one
/// 16-bit type, contiguous in the dot products' indices (and W in the
/// output column), the lengths multiples of 64 up to 256; for the SIMT
/// kernel (SimtScoreKernel.cpp) any float types, layouts and lengths up to
/// 256.
std::optional<ScoreMatch> matchScoreReduction(ComprehensionOp op,
                                              std::string &why,
                                              bool tensorCores = true);

/// The dots of `second` as indices of `first`'s equal dots (both score
/// reductions over the same rows, batch indices and keys), or nullopt.
std::optional<SmallVector<unsigned>> matchDots(ComprehensionOp first,
                                               const ScoreMatch &m1,
                                               ComprehensionOp second,
                                               const ScoreMatch &m2);

/// Whether one score kernel can compute `op` and `sibling` (both score
/// reductions over the same rows and keys, `sibling`'s dot products among
/// `op`'s).
bool isScoreSibling(ComprehensionOp op, ComprehensionOp sibling);

/// An online-softmax reduction O[.., d] = online_softmax_j (s(.., j),
/// v(.., j, d)) whose value is a read contiguous in the value column d (the
/// last parallel index) and whose score does not depend on d: any scalar
/// code of the other indices and the key (decode attention over scores
/// computed before, or in the body). Split over the keys among blocks, each
/// block's partial carriers combined by the same monoid (flash-decoding).
/// `group` consecutive rows (values of the index before d) read the same
/// keys and values (grouped-query attention: the query heads of one
/// key/value head): one block takes them together, each key and value
/// loaded once for the group.
/// A split online-softmax reduction's products on tensor cores (mma.sync
/// m16n8k16, SplitSoftmaxMma.cpp): the score a function of one dot product
/// sum_e q(.., e) k(.., j, e) (times constant factors) of a query read and
/// a 16-bit key read, the value a read of the key's type; the block's rows
/// (a group of query heads) are the products' rows.
struct SplitSoftmaxMma {
  ComprehensionOp red; // The dot product over e.
  ReadOp q, k, v;
  /// Factors of the summand that depend on no index (a scale).
  SmallVector<Value> factors;
  /// The body operations computing the score from red's result (all but
  /// the dot product and the value's chain).
  SmallVector<Operation *> scoreOps;
  Type elementType; // k's and v's: f16 or bf16.
  int64_t dqk;      // The dot product's extent.
};

/// A per-row limit on the keys of a split online-softmax reduction: the
/// score is select(j + a < x, s, -inf) (or an equivalent signed
/// comparison: `<=`, the sides swapped), x an integer computed from the
/// other indices only (neither the key nor the value column) -- each
/// sequence's length in a decode batch of different lengths, read from a
/// tensor. Keys from x + offset on are masked: the kernels skip them (they
/// never read their keys or values), and every use of the comparison
/// inside a block's run of keys is true (the kernels take it as true).
/// The value may be select(the same comparison, v, 0): zero where the
/// score is -inf, so that a masked term contributes nothing even where the
/// skipped value is not finite (0 x NaN is NaN), and the interpreter, which
/// visits every key, agrees with kernels that skip them.
struct SplitSoftmaxKeyLimit {
  Value limit;                  // x.
  int64_t offset;               // Keys j < x + offset are kept.
  Operation *condition;         // The comparison.
  SmallVector<Operation *> ops; // The body operations computing x, in order.
};

struct SplitSoftmaxMatch {
  unsigned d;   // The value-column index.
  Value j;      // The key index (the op's reduced index).
  ReadOp value; // The value's read (under the key limit's select).
  std::optional<SplitSoftmaxKeyLimit> keyLimit;
  int64_t dv;        // The value columns.
  int64_t rows;      // Points of the parallel indices but d.
  int64_t group = 1; // Rows per block, sharing every read of a key.
  /// With tensor cores (the kernel choice's): the products on them.
  std::optional<SplitSoftmaxMma> mma;
};

/// Whether `read` reads the same elements for the values g * k + c, c < g,
/// of `index` (for every k): its map uses `index` only as `index floordiv
/// n`, n a multiple of g, or not at all.
bool isSharedByGroup(ReadOp read, Value index, int64_t g);

/// `op` as a split online-softmax reduction (static parallel extents, the
/// key extent static or symbolic); std::nullopt with `why` set otherwise.
std::optional<SplitSoftmaxMatch> matchSplitSoftmax(ComprehensionOp op,
                                                   std::string &why);

/// Split online-softmax reduction `m` of `op` with its score's dot product
/// and the value product on mma.sync tensor cores; std::nullopt with `why`
/// set when its shape does not allow it (AttentionMatchers.cpp says what
/// it needs).
std::optional<SplitSoftmaxMma> matchSplitSoftmaxMma(ComprehensionOp op,
                                                    const SplitSoftmaxMatch &m,
                                                    std::string &why);

/// The key splits of split online-softmax reduction `m` on a device of
/// `smCount` multiprocessors: blocks (row groups x splits) for `perSm` per
/// multiprocessor (0: two on mma.sync, m.mma, the splits rounded down so
/// that every block is resident at once; eight on lanes, rounded up), at
/// least one and at most 64 splits, and, with a static key extent, at
/// least 64 keys per split
/// (the kernel also gives each block at least 64 keys when the extent is
/// known only as it runs: short contexts run on few blocks).
int64_t getSoftmaxSplits(ComprehensionOp op, const SplitSoftmaxMatch &m,
                         int64_t smCount, int64_t perSm = 0);

} // namespace mlir::tang

#endif // TANG_ANALYSIS_ATTENTIONMATCHERS_H
