//===- Npy.h - .npy files for the tang host runtimes ------------*- C++ -*-===//
//
// Reading and writing NumPy .npy files, shared by runtime/cuda and
// runtime/vulkan.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_COMMON_NPY_H
#define TANG_RUNTIME_COMMON_NPY_H

#include "Error.h"
#include "Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tang::runtime {

/// A .npy array: its dtype without byte order ("f4", "u2", "b1", ...), its
/// shape and its raw little-endian bytes.
struct Npy {
  std::string descr;
  /// The dtype as written, with its byte order ("<f4", "|b1", ...).
  std::string typestr;
  std::vector<int64_t> shape;
  std::string data;
};

/// A shape in Python tuple syntax: "()", "(8,)", "(8, 32)".
std::string npyShapeString(const std::vector<int64_t> &shape);

/// Reads the .npy file at `path` (format versions 1 to 3, C order,
/// little-endian); the data must be exactly as large as the shape says.
Expected<Npy> readNpy(const std::string &path);

/// The .npy descr (without byte order) written for `t`.
std::string npyDescr(DType t);

/// Whether a .npy array of `descr` can feed a buffer of type `t` bit for bit.
bool npyAccepts(DType t, const std::string &descr);

/// Writes `data` (type `t`, shape `shape`) to the .npy file at `path`.
Error writeNpy(const std::string &path, DType t,
               const std::vector<int64_t> &shape, const std::string &data);

/// Writes `data` (dtype `descr` with its byte order, e.g. "<f8", and shape
/// `shape`) to the .npy file at `path`.
Error writeNpy(const std::string &path, const std::string &descr,
               const std::vector<int64_t> &shape, const std::string &data);

/// Converts `npy` into `out` (b.numBytes() bytes), the contents of a buffer
/// of `b`'s dtype: f32 and f64 buffers take <f4 and <f8 arrays, f16 buffers
/// <f2, i32 buffers <i4 and <i8 (in range). `what` names the input in
/// errors.
Error convertNpyInput(const Npy &npy, const BufferSpec &b,
                      const std::string &what, void *out);

/// Writes buffer contents `data` of `b` to the .npy file at `path`: floats
/// (f16, f32, f64) as float64 (<f8, as tang-run writes them), i32 as int32
/// (<i4).
Error writeBufferNpy(const std::string &path, const BufferSpec &b,
                     const void *data);

/// Decodes an IEEE binary16 value (an f16 buffer element).
double decodeHalf(uint16_t h);

/// Creates `dir` and its parents.
Error makeDirs(const std::string &dir);

} // namespace tang::runtime

#endif // TANG_RUNTIME_COMMON_NPY_H
