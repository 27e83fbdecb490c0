//===- NpyFile.h - the .npy file format -------------------------*- C++ -*-===//
//
// The one reader and writer of NumPy .npy files (format versions 1 to 3, C
// order, little-endian), shared by the reference interpreter (lib/Interpreter,
// which widens the data to float64) and the host runtimes (runtime/cuda,
// runtime/vulkan, runtime/opencl, which copy it into buffers). Depends on
// nothing but the C++ library and Error.h.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_COMMON_NPYFILE_H
#define TANG_RUNTIME_COMMON_NPYFILE_H

#include "Error.h"

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

/// Parses the bytes of a .npy file. The dtype must be one of fixed width
/// ("<kind><bytes>", e.g. "f4"; the caller decides which it takes), the data
/// exactly as large as the shape says. Errors say what is wrong: bad magic,
/// malformed or truncated header, big-endian or Fortran order, truncated or
/// trailing data.
Expected<Npy> parseNpy(const std::string &bytes);

/// Reads and parses the .npy file at `path` (errors start with the path).
Expected<Npy> readNpy(const std::string &path);

/// Writes `data` (dtype `typestr` with its byte order, e.g. "<f8", and shape
/// `shape`) to the .npy file at `path`, format version 1.0, the data 64-byte
/// aligned.
Error writeNpy(const std::string &path, const std::string &typestr,
               const std::vector<int64_t> &shape, const std::string &data);

/// Decodes an IEEE binary16 value (an f16 element).
double decodeHalf(uint16_t h);

} // namespace tang::runtime

#endif // TANG_RUNTIME_COMMON_NPYFILE_H
