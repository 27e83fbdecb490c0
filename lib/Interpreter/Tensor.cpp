//===- Tensor.cpp - the interpreter's tensors -------------------*- C++ -*-===//

#include "Tang/Interpreter/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;

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

uint64_t mlir::tang::splitMix64(uint64_t &state) {
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
  // The stream is hashed first: stream * the generator's increment would
  // make stream k the sequence of stream 0 advanced by k values (the
  // arguments' inputs shifted copies of one another).
  uint64_t streamState = stream;
  uint64_t state = seed * 0x2545f4914f6cdd1dULL ^ splitMix64(streamState);
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
