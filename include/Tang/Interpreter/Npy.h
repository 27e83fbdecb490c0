//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes the NumPy .npy format (versions 1.0-3.0, little-endian,
// C order) for the reference interpreter's inputs and outputs.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_INTERPRETER_NPY_H
#define TANG_INTERPRETER_NPY_H

#include "Tang/Interpreter/Interpreter.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tang {

/// An array read from a .npy file, widened to float64.
struct NpyArray {
  SmallVector<int64_t> shape;
  /// NumPy's type string without the byte-order mark: "f8", "f4", "f2",
  /// "i8", "i4", "i2", "i1", "u1", "b1".
  std::string dtype;
  std::vector<double> data;
};

/// NumPy's name of a .npy type string (`dtype` of NpyArray): "int64" for
/// "i8", "float32" for "f4", ... ("i8" is not MLIR's i8).
StringRef npyDtypeName(StringRef dtype);

/// Parses a .npy file's bytes. Errors say what is wrong (bad magic,
/// malformed header, big-endian or Fortran order, unsupported dtype,
/// truncated data).
llvm::Expected<NpyArray> parseNpy(StringRef bytes);

/// Reads and parses a .npy file.
llvm::Expected<NpyArray> readNpy(StringRef path);

/// Writes `t` to `path`: floating-point tensors as float64 ("<f8"), i32 as
/// "<i4", i8 as "|i1", i1 as "|b1".
llvm::Error writeNpy(StringRef path, const Tensor &t);

} // namespace mlir::tang

#endif // TANG_INTERPRETER_NPY_H
