//===- Npy.cpp - .npy files for the tang host runtimes ----------*- C++ -*-===//
//
// .npy files as the host runtimes' buffers (the format: NpyFile.cpp).
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace tang::runtime;

std::string tang::runtime::npyDescr(DType t) {
  switch (t) {
  case DType::F64:
    return "f8";
  case DType::F32:
    return "f4";
  case DType::F16:
    return "f2";
  case DType::BF16:
    return "u2";
  case DType::I32:
    return "i4";
  case DType::I8:
    return "i1";
  case DType::I1:
    return "b1";
  }
  return "?";
}

bool tang::runtime::npyAccepts(DType t, const std::string &descr) {
  if (descr == npyDescr(t))
    return true;
  if (t == DType::BF16)
    return descr == "i2";
  if (t == DType::I1)
    return descr == "u1" || descr == "i1";
  return false;
}

Error tang::runtime::writeNpy(const std::string &path, DType t,
                              const std::vector<int64_t> &shape,
                              const std::string &data) {
  return writeNpy(path, (dtypeBytes(t) == 1 ? "|" : "<") + npyDescr(t), shape,
                  data);
}

Error tang::runtime::makeDirs(const std::string &dir) {
  for (size_t p = 1; p <= dir.size(); ++p) {
    if (p != dir.size() && dir[p] != '/')
      continue;
    std::string prefix = dir.substr(0, p);
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return Error::failure("cannot create " + prefix + ": " +
                            std::strerror(errno));
  }
  return Error::success();
}

/// Converts `npy` into `out` (b.numBytes() bytes), the contents of a buffer of
/// `b`'s dtype. f32 and f64 buffers take <f4 and <f8 arrays, f16 buffers <f2
/// (bit for bit); i32 buffers take <i4 and <i8 (in range).
Error tang::runtime::convertNpyInput(const Npy &npy, const BufferSpec &b,
                                     const std::string &what, void *out) {
  size_t n = size_t(b.numElements());
  auto cannot = [&] {
    return Error::failure(what + ": a .npy array of dtype '" + npy.typestr +
                          "' cannot feed a " + dtypeName(b.dtype) +
                          " buffer (use " +
                          (b.dtype == DType::I32   ? "<i4 or <i8"
                           : b.dtype == DType::F16 ? "<f2"
                                                   : "<f4 or <f8") +
                          ")");
  };
  const char *src = npy.data.data();
  if (b.dtype == DType::F16) {
    if (npy.descr != "f2")
      return cannot();
    std::memcpy(out, src, 2 * n);
    return Error::success();
  }
  if (b.dtype == DType::F32 || b.dtype == DType::F64) {
    bool f4 = npy.descr == "f4", f8 = npy.descr == "f8";
    if (!f4 && !f8)
      return cannot();
    for (size_t i = 0; i < n; ++i) {
      double x;
      if (f4) {
        float v;
        std::memcpy(&v, src + 4 * i, 4);
        x = v;
      } else {
        std::memcpy(&x, src + 8 * i, 8);
      }
      if (b.dtype == DType::F32) {
        float v = float(x);
        std::memcpy(static_cast<char *>(out) + 4 * i, &v, 4);
      } else {
        std::memcpy(static_cast<char *>(out) + 8 * i, &x, 8);
      }
    }
    return Error::success();
  }
  if (b.dtype == DType::I32) {
    bool i4 = npy.descr == "i4", i8 = npy.descr == "i8";
    if (!i4 && !i8)
      return cannot();
    for (size_t i = 0; i < n; ++i) {
      int64_t x;
      if (i4) {
        int32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        x = v;
      } else {
        std::memcpy(&x, src + 8 * i, 8);
        if (x < INT32_MIN || x > INT32_MAX)
          return Error::failure(what + ": element " + std::to_string(i) + " (" +
                                std::to_string(x) + ") does not fit in i32");
      }
      int32_t v = int32_t(x);
      std::memcpy(static_cast<char *>(out) + 4 * i, &v, 4);
    }
    return Error::success();
  }
  return cannot();
}

Error tang::runtime::checkIndexInputs(const FunctionSpec &f,
                                      const std::vector<Npy> &inputs,
                                      const std::vector<std::string> &names) {
  for (const IndexCheckSpec &c : f.indexChecks) {
    size_t k = 0;
    for (unsigned i = 0; i < c.arg; ++i)
      k += f.args[i].role == BufferSpec::Role::Input;
    if (k >= inputs.size())
      continue; // The caller reports the missing input.
    const Npy &npy = inputs[k];
    size_t width = npy.descr.size() == 2 ? size_t(npy.descr[1] - '0') : 0;
    bool isSigned = !npy.descr.empty() && npy.descr[0] == 'i';
    if ((!isSigned && npy.descr[0] != 'u') ||
        (width != 1 && width != 2 && width != 4 && width != 8))
      continue; // Not an integer array: the conversion reports it.
    size_t n = npy.data.size() / width;
    for (size_t e = 0; e < n; ++e) {
      const char *at = npy.data.data() + e * width;
      int64_t v = 0;
      bool huge = false;
      if (width == 1) {
        v = isSigned ? int64_t(int8_t(*at)) : int64_t(uint8_t(*at));
      } else if (width == 2) {
        uint16_t u;
        std::memcpy(&u, at, 2);
        v = isSigned ? int64_t(int16_t(u)) : int64_t(u);
      } else if (width == 4) {
        uint32_t u;
        std::memcpy(&u, at, 4);
        v = isSigned ? int64_t(int32_t(u)) : int64_t(u);
      } else {
        uint64_t u;
        std::memcpy(&u, at, 8);
        huge = !isSigned && u > uint64_t(INT64_MAX);
        v = int64_t(u);
      }
      if (!huge && v >= 0 && v < c.bound)
        continue;
      std::string where = k < names.size() ? names[k] : "";
      return Error::failure(
          "input #" + std::to_string(k) +
          (where.empty() ? "" : " (" + where + ")") + ": element " +
          std::to_string(e) + " is " +
          (huge ? std::to_string(uint64_t(v)) : std::to_string(v)) +
          ", outside [0, " + std::to_string(c.bound) + ") for " + c.what +
          "; nothing ran");
    }
  }
  return Error::success();
}

/// Writes buffer contents `data` of `b` to the .npy file at `path`: floats
/// (f16, f32, f64) as float64 (<f8), i32 as int32 (<i4).
Error tang::runtime::writeBufferNpy(const std::string &path,
                                    const BufferSpec &b, const void *data) {
  size_t n = size_t(b.numElements());
  std::string payload;
  std::string descr;
  if (b.dtype == DType::I32) {
    descr = "<i4";
    payload.assign(static_cast<const char *>(data), 4 * n);
  } else {
    descr = "<f8";
    payload.resize(8 * n);
    for (size_t i = 0; i < n; ++i) {
      double x;
      if (b.dtype == DType::F32) {
        float v;
        std::memcpy(&v, static_cast<const char *>(data) + 4 * i, 4);
        x = v;
      } else if (b.dtype == DType::F16) {
        uint16_t h;
        std::memcpy(&h, static_cast<const char *>(data) + 2 * i, 2);
        x = decodeHalf(h);
      } else {
        std::memcpy(&x, static_cast<const char *>(data) + 8 * i, 8);
      }
      std::memcpy(&payload[8 * i], &x, 8);
    }
  }
  return tang::runtime::writeNpy(path, descr, b.shape, payload);
}
