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
#include <map>
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

/// A size of a function with symbolic sizes: terms[0] + sum_i terms[i + 1]
/// * symbol_i (docs/Bundle.md).
struct SizeExpr {
  std::vector<int64_t> terms;
  /// The value at `symbols` (one per size symbol).
  int64_t evaluate(const std::vector<int64_t> &symbols) const;
};

/// One buffer of a function: an argument or a temporary; or an `index`
/// argument (role Size), a scalar the caller gives (--size argK=N).
struct BufferSpec {
  /// What the buffer is for.
  enum class Role { Input, Output, Temporary, Size };
  Role role = Role::Input;
  /// Dense row-major shape; empty for a scalar. A dimension given by a size
  /// is -1 here and its size is in `sizes` (FunctionSpec::instantiate
  /// resolves it).
  std::vector<int64_t> shape;
  /// Per dimension, its size when the dimension is -1 in `shape`.
  std::vector<std::optional<SizeExpr>> sizes;
  DType dtype = DType::F32;
  /// Initial contents of a temporary (the sizes buffer; a tensor constant's
  /// data file, read by Manifest::loadFile), numBytes() bytes, if any.
  std::vector<char> init;
  /// For a tensor constant: the file of the bundle holding its contents.
  std::string data;
  /// For an output updated in place: the argument index of the (donated)
  /// input whose buffer it is; the runtime passes that buffer and reads the
  /// output from it. -1 otherwise.
  int aliasOf = -1;

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
  /// The buffer of size values ({"sizes": true}); FunctionSpec::instantiate
  /// turns it into a temporary with those values.
  bool isSizes = false;
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

/// A size symbol of a function: an index argument (dim < 0) or a
/// dimension of an input.
struct SizeSymbolSpec {
  unsigned arg = 0;
  int dim = -1;
  /// Its name in messages, e.g. "%arg5" or "dim 0 of %arg1".
  std::string name;
};

/// A condition on the sizes: `size` >= 0, i.e. `condition`, for `what`.
struct RequirementSpec {
  SizeExpr size;
  std::string what, condition;
};

/// A data coordinate the runtime checks before a run (a trap gather's token
/// ids): every element of input argument `arg` lies in [0, bound).
struct IndexCheckSpec {
  unsigned arg = 0;
  int64_t bound = 0;
  /// The gather or scatter and the coordinate, for messages.
  std::string what;
};

/// A host function: its buffers and its launch sequence.
struct FunctionSpec {
  std::string name;
  /// The function's buffers, in order (inputs and outputs).
  std::vector<BufferSpec> args;
  /// Device buffers the sequence needs (no initial value).
  std::vector<BufferSpec> temporaries;
  std::vector<LaunchSpec> launches;
  /// With symbolic sizes: its size symbols and what they must satisfy.
  std::vector<SizeSymbolSpec> sizes;
  std::vector<RequirementSpec> requirements;
  /// Integer inputs whose elements must index a dimension.
  std::vector<IndexCheckSpec> indexChecks;

  /// The number of input arguments.
  size_t numInputs() const;
  /// The number of output arguments.
  size_t numOutputs() const;
  /// Whether some shape depends on sizes given when the function runs.
  bool isSymbolic() const;

  /// This function at the sizes that `inputShapes` (one per input, in
  /// order) and `sizeArgs` (index arguments by argument number) give: every
  /// shape resolved, the index arguments gone (launch arguments
  /// renumbered), the sizes buffer a temporary holding the symbols' values.
  /// Fails, naming the size and its value, when a size is missing or below
  /// 1, or breaks a requirement; nothing has run then. A function without
  /// sizes comes back as it is.
  Expected<FunctionSpec>
  instantiate(const std::vector<std::vector<int64_t>> &inputShapes,
              const std::map<unsigned, int64_t> &sizeArgs) const;
};

/// Parses a `--size argK=N` value into `sizeArgs`.
Error parseSizeArg(const std::string &spec,
                   std::map<unsigned, int64_t> &sizeArgs);

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
