//===- ScheduleTuning.h - schedules chosen by measurement -------*- C++ -*-===//
//
// What --tang-schedule needs to take schedules from measurement instead of
// its heuristics:
//
//  * the key a measured schedule is stored under: the comprehension's
//    structure (its ops, attributes, element types and use-def graph, not
//    its sizes; a stable 64-bit hash of a canonical text), its sizes (the
//    iteration extents and the shapes of the tensors it reads) and the chip
//    of the module's #tang.target;
//  * the tuning cache: a JSON file of measured schedules by key, replayed
//    by `--tang-schedule="cache=FILE"` (exactly by key, or for the
//    tensor-core kernels, whose tiles do not depend on the extents, from
//    the nearest sizes of the same size class: each extent rounded up to a
//    power of two);
//  * the search space: the candidate schedules of a comprehension's kernel
//    (tiles, ring depth, warps, bulk copies, warp specialisation, grid
//    order for contractions; key steps, ring and grid for flash attention;
//    splits for decode attention; threads and vector widths for row and
//    pointwise kernels), each valid for its emitter and ranked by a
//    modelled time from the device model, written by
//    `--tang-schedule="candidates=FILE"` for bench/tune.py to measure.
//
// The cache format is documented in docs/Tuning.md.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TRANSFORMS_SCHEDULETUNING_H
#define TANG_TRANSFORMS_SCHEDULETUNING_H

#include "Tang/Analysis/KernelChoice.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::tang {

/// The key a schedule is measured and stored under.
struct ScheduleKey {
  /// 16 hex digits: the hash of getStructureText.
  std::string structure;
  /// The chip of the module's #tang.target (`sm_90a`).
  std::string chip;
  /// The iteration extents, parallel then reduced (-1: symbolic).
  SmallVector<int64_t> extents;
  /// The extents then the shapes of the tensors read from outside, as
  /// `1000x1000x1000;1000x1000,1000x1000` (`?` for a symbolic size).
  std::string sizes;
  /// Each extent rounded up to a power of two (`?` kept).
  std::string sizeClass;
};

/// The canonical text of `op`'s structure: one line per op (itself and
/// every nested one, in pre-order) with its name, operands (values defined
/// inside numbered in order, values from outside by first use with their
/// element type and rank), attributes (but the comprehensions' extents,
/// the schedules and `tang.*` discardable attributes) and result types
/// without shapes.
std::string getStructureText(ComprehensionOp op);

/// `op`'s key in its module's #tang.target's chip.
ScheduleKey getScheduleKey(ComprehensionOp op);

/// A schedule with the schedules of the comprehensions nested in it (a
/// contraction's k step), in pre-order, as attribute text.
struct ScheduleText {
  std::string schedule;
  SmallVector<std::string> nested;
};

/// `op`'s schedule and its nested comprehensions' schedules.
ScheduleText getScheduleText(ComprehensionOp op);

/// Puts `text`'s schedules on `op` and its nested comprehensions and checks
/// that `op`'s kernel can honour them (getScheduledKernel, for the kernels
/// that name their kind). On failure `op` is left as it was and `why` says
/// what was refused.
LogicalResult applyScheduleText(ComprehensionOp op, const ScheduleText &text,
                                std::string &why);

/// A tuning cache (docs/Tuning.md): measured schedules by key.
class ScheduleCache {
public:
  struct Entry {
    std::string structure, chip, sizes, sizeClass;
    SmallVector<int64_t> extents;
    ScheduleText text;
  };

  /// Reads `path`; an error message naming the file and what is wrong on
  /// failure.
  static FailureOr<ScheduleCache> load(StringRef path, std::string &error);

  /// The entries that may give `key`'s schedule, best first: the exact one
  /// (same structure, chip and sizes); then, when `similar`, those of the
  /// same structure, chip and size class, nearest extents first.
  SmallVector<const Entry *> lookup(const ScheduleKey &key, bool similar) const;

private:
  std::vector<Entry> entries;
};

/// One candidate schedule of a comprehension and its modelled time.
struct ScheduleCandidate {
  ScheduleText text;
  /// Seconds, from the device model (see getScheduleCandidates); 0 where
  /// the kernel has no model.
  double modelSeconds = 0;
  /// What distinguishes it, e.g. `128x256x64 s4 tma ws g8`.
  std::string label;
  /// Where it comes from beside the enumeration: "heuristic" (the first),
  /// "traffic-bound" (the valid tiles nearest the traffic bound's LP tile
  /// at shared memory; `heuristic+traffic-bound` when they are the
  /// heuristic's), else empty. Seeded candidates are never pruned.
  std::string seed;
};

/// The candidate schedules of `op`, whose schedule (the heuristic's, with
/// its kernel chosen under `options`) is the first candidate: variants of
/// its kernel's parameters that its emitter takes, on `op`'s target.
/// Those whose modelled time exceeds `prune` times the best modelled are
/// dropped, then at most `limit` are kept, best modelled first (the
/// heuristic's always). `op`'s schedule is left as it was.
SmallVector<ScheduleCandidate>
getScheduleCandidates(ComprehensionOp op, const KernelOptions &options,
                      double prune, int64_t limit);

/// The candidates of `op` as the JSON object bench/tune.py reads: key,
/// location, kernel kind and candidates.
llvm::json::Object getCandidatesJson(ComprehensionOp op,
                                     ArrayRef<ScheduleCandidate> candidates);

} // namespace mlir::tang

#endif // TANG_TRANSFORMS_SCHEDULETUNING_H
