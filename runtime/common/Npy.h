//===- Npy.h - .npy files for the tang host runtimes ------------*- C++ -*-===//
//
// .npy files as the host runtimes' buffers (runtime/cuda, runtime/vulkan,
// runtime/opencl): which dtypes feed which buffer, and buffers written back.
// The file format itself is NpyFile.h's, shared with the interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_COMMON_NPY_H
#define TANG_RUNTIME_COMMON_NPY_H

#include "Error.h"
#include "Manifest.h"
#include "NpyFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tang::runtime {

/// The .npy descr (without byte order) written for `t`.
std::string npyDescr(DType t);

/// Whether a .npy array of `descr` can feed a buffer of type `t` bit for bit.
bool npyAccepts(DType t, const std::string &descr);

/// Writes `data` (type `t`, shape `shape`) to the .npy file at `path`.
Error writeNpy(const std::string &path, DType t,
               const std::vector<int64_t> &shape, const std::string &data);

/// Converts `npy` into `out` (b.numBytes() bytes), the contents of a buffer
/// of `b`'s dtype: f32 and f64 buffers take <f4 and <f8 arrays, f16 buffers
/// <f2, i32 buffers <i4 and <i8 (in range). `what` names the input in
/// errors.
Error convertNpyInput(const Npy &npy, const BufferSpec &b,
                      const std::string &what, void *out);

/// Checks `f`'s index checks on its inputs `inputs` (in input order, named
/// by `names` in errors): an element outside its dimension fails the run
/// before anything is uploaded, naming the input, the element, its value
/// and the gather.
Error checkIndexInputs(const FunctionSpec &f, const std::vector<Npy> &inputs,
                       const std::vector<std::string> &names);

/// Writes buffer contents `data` of `b` to the .npy file at `path`: floats
/// (f16, f32, f64) as float64 (<f8, as tang-run writes them), i32 as int32
/// (<i4).
Error writeBufferNpy(const std::string &path, const BufferSpec &b,
                     const void *data);

/// Creates `dir` and its parents.
Error makeDirs(const std::string &dir);

} // namespace tang::runtime

#endif // TANG_RUNTIME_COMMON_NPY_H
