//===- Tensor.h - the interpreter's tensors ---------------------*- C++ -*-===//
//
// The values the reference interpreter computes on: dense row-major tensors
// of float64, and the seeded random inputs tang-run feeds a program.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_INTERPRETER_TENSOR_H
#define TANG_INTERPRETER_TENSOR_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::tang {

/// A dense row-major tensor of float64 values. Integer and i1 elements are
/// held exactly (i1 as 0 or 1). `elementType` is the element type the IR
/// declares; the values are never rounded to it.
struct Tensor {
  SmallVector<int64_t> shape;
  Type elementType;
  std::vector<double> data;

  int64_t getNumElements() const;
  /// Row-major strides of `shape`.
  SmallVector<int64_t> getStrides() const;
};

/// The number of elements of `shape`, or nothing if it overflows int64.
std::optional<int64_t> getNumElementsChecked(ArrayRef<int64_t> shape);

/// Deterministic pseudo-random inputs for `type`: floats uniform in [-1, 1),
/// integers uniform in [-8, 8], i1 uniform in {0, 1}. The same `seed` and
/// `stream` always give the same tensor.
Tensor makeRandomTensor(RankedTensorType type, uint64_t seed, uint64_t stream);

/// The next value of the SplitMix64 generator at `state`: the seeded random
/// inputs (makeRandomTensor) and the monoid law checks' samples.
uint64_t splitMix64(uint64_t &state);

} // namespace mlir::tang

#endif // TANG_INTERPRETER_TENSOR_H
