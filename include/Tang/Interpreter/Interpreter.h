//===- Interpreter.h - the float64 reference interpreter --------*- C++ -*-===//
//
// Evaluates a tang function directly from the IR in float64. It is the
// oracle for every rewrite and every backend, so it shares no code with any
// lowering: it reads the IR's meaning (comprehensions, monoids, views) and
// nothing else. The builtin monoids' meaning is the dialect's
// (TangMonoids.h): the same IR the kernels run, evaluated in float64.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_INTERPRETER_INTERPRETER_H
#define TANG_INTERPRETER_INTERPRETER_H

#include "Tang/Interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::tang {

/// How a run rounds.
struct InterpretOptions {
  /// The precision emulator: instead of exact float64 math, the roundings
  /// the kernels of the program's schedules make (docs/Tuning.md,
  /// "Precision"): inputs and every function-level result rounded to their
  /// element types; body arithmetic in f32 (f64 kept; f16/bf16 in f32 as
  /// kernels compute them, an `arith.truncf` to them no rounding: only
  /// stores round); reductions accumulated in f32 in the schedule's order
  /// (a SIMT row kernel's threads striding the row in runs of its vector,
  /// combined as a warp's butterfly; split kernels' chunks combined in
  /// order; a column kernel's rows in split chunks, each in runs of a
  /// warp's, combined in order; tensor-core kernels in key/k order); reads
  /// of f32 tensors by a
  /// tensor-core comprehension rounded to tf32. Comprehensions without a
  /// schedule accumulate in order.
  bool emulatePrecision = false;
  /// Monte Carlo arithmetic, seeded: float64 in the reference's order, but
  /// every result a kernel would round (body arithmetic and math functions
  /// at f32's unit roundoff, f64 at f64's; the elements a comprehension
  /// stores at their type's) multiplied by (1 + u xi), xi
  /// uniform on [-1, 1), independently. Its distance from the exact run is
  /// how far rounding in *some* order moves each output: an output that
  /// cancels exactly in float64 (a sum minus the same sum computed again)
  /// moves by the rounding of the terms, as it does in a kernel that
  /// computes the two sums in different orders. Not with emulatePrecision.
  std::optional<uint64_t> perturbSeed;
};

/// Rounds `t`'s values to its element type (f32, bf16, f16; nearest even):
/// the values a tensor of that type can hold. The precision emulator stores
/// inputs and results so (a scan's and a scatter's accumulation itself is
/// not modelled: only their results are rounded).
void roundToElementType(Tensor &t);

/// Evaluates `func` on `inputs` (one per argument, shapes already checked by
/// the caller or checked here). Returns the function's results, or failure
/// after emitting a diagnostic at the location of the offending operation
/// (an unsupported op names itself and its location).
FailureOr<SmallVector<Tensor>> interpret(func::FuncOp func,
                                         ArrayRef<Tensor> inputs,
                                         const InterpretOptions &options = {});

/// Checks the monoid laws on `numSamples` random carriers drawn from `seed`,
/// for every builtin monoid (on an f64 carrier and, where the monoid takes
/// integers, on i32 and i1 ones) and for every `tang.monoid` in `module`:
/// associativity, the identity on both sides, and commutativity where the
/// monoid declares it (every builtin does). Float components are compared up
/// to rounding (relative 1e-12), integer ones exactly. Builtin carriers are
/// drawn from their valid domain (l >= 1 for softmax, non-negative indices,
/// ties, +-inf and NaN where the monoid handles them); user carriers have
/// each float component uniform in [0.25, 2) and each integer one in [1, 16]
/// (i1: {0, 1}), since user carriers such as counts are often positive.
///
/// Prints one line per monoid to `os`, e.g. `monoid add (f64): associative,
/// identity, commutative: ok (1000 samples)`, and emits an error at the
/// `tang.monoid` (at `module` for a builtin) for the first counterexample to
/// each violated law. Fails if any law is violated.
LogicalResult checkMonoidLaws(ModuleOp module, raw_ostream &os,
                              unsigned numSamples, uint64_t seed);

} // namespace mlir::tang

#endif // TANG_INTERPRETER_INTERPRETER_H
