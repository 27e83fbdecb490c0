//===- Manifest.h - The tang bundle manifest --------------------*- C++ -*-===//
//
// manifest.json of a tang bundle (docs/Bundle.md): a strict JSON parser
// and the validated manifest, shared by runtime/cuda and runtime/vulkan.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_COMMON_MANIFEST_H
#define TANG_RUNTIME_COMMON_MANIFEST_H

#include "Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tang::runtime {

/// The whole file at `path`.
Expected<std::string> readFile(const std::string &path);

/// A grid or block size.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// An element type of a bundle buffer.
enum class DType { F64, F32, F16, BF16, I32, I8, I1 };

/// The manifest spelling of `type` ("f32", "bf16", ...).
const char *dtypeName(DType type);
/// Bytes per element (i1 takes one byte).
size_t dtypeBytes(DType type);
/// The type spelled `name`, if any.
std::optional<DType> parseDType(const std::string &name);

/// One buffer of a function: an argument or a temporary.
struct BufferSpec {
  /// What the buffer is for.
  enum class Role { Input, Output, Temporary };
  Role role = Role::Input;
  /// Dense row-major shape; empty for a scalar.
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  /// The number of elements (1 for a scalar).
  int64_t numElements() const;
  /// The size in bytes.
  size_t numBytes() const { return numElements() * dtypeBytes(dtype); }
};

/// A tensor map (CUtensorMap) over a buffer, passed by value: the buffer's
/// dense row-major shape tiled in boxes, for bulk tensor copies. Encoded
/// with zero fill out of bounds, 256-byte L2 promotion, no interleave.
struct TensorMapSpec {
  /// Elements per box along each buffer dimension, outermost first.
  std::vector<int64_t> box;
  /// The shared-memory swizzle in bytes: 0, 32, 64 or 128.
  unsigned swizzle = 0;
};

/// One kernel parameter of a launch: argument or temporary #index, as a
/// device pointer or, with `tensorMap`, as a tensor map over it.
struct LaunchArg {
  bool isTemporary = false;
  unsigned index = 0;
  std::optional<TensorMapSpec> tensorMap;
};

/// One kernel launch of a function's sequence.
struct LaunchSpec {
  std::string kernel;
  Dim3 grid, block;
  unsigned sharedBytes = 0;
  /// One device pointer per kernel parameter, in order.
  std::vector<LaunchArg> args;
};

/// A host function: its buffers and its launch sequence.
struct FunctionSpec {
  std::string name;
  /// The function's buffers, in order (inputs and outputs).
  std::vector<BufferSpec> args;
  /// Device buffers the sequence needs (no initial value).
  std::vector<BufferSpec> temporaries;
  std::vector<LaunchSpec> launches;

  /// The number of input arguments.
  size_t numInputs() const;
  /// The number of output arguments.
  size_t numOutputs() const { return args.size() - numInputs(); }
};

/// A parsed and validated manifest.json (format version 1).
struct Manifest {
  int version = 1;
  /// "ptx", "cubin" or "spirv".
  std::string format;
  /// The image file, relative to the bundle directory.
  std::string image;
  /// The target chip, e.g. "sm_90a".
  std::string chip;
  std::vector<FunctionSpec> functions;

  /// Checks the "format" member: returns the message of its error ("unknown
  /// format ..."), or an empty string when the runtime reads `format`.
  using FormatCheck = std::string (*)(const std::string &format);
  /// Accepts "ptx" and "cubin" (the CUDA runtime's formats).
  static std::string checkCudaFormat(const std::string &format);

  /// Parses and validates manifest text; `where` names it in errors.
  static Expected<Manifest> parse(const std::string &json,
                                  const std::string &where = "manifest.json",
                                  FormatCheck checkFormat = checkCudaFormat);
  /// Reads, parses and validates the manifest at `path`.
  static Expected<Manifest> loadFile(const std::string &path,
                                     FormatCheck checkFormat = checkCudaFormat);

  /// The function called `name`, or null.
  const FunctionSpec *find(const std::string &name) const;
  /// The function names, comma-separated (for error messages).
  std::string functionNames() const;
};

} // namespace tang::runtime

#endif // TANG_RUNTIME_COMMON_MANIFEST_H
