//===- Npy.cpp - .npy files for the tang host runtimes ----------*- C++ -*-===//
//
// Reading and writing NumPy .npy files (format versions 1 to 3, C order,
// little-endian), shared by runtime/cuda and runtime/vulkan.
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

namespace {

/// The text after `'key':` in a .npy header dict.
std::optional<std::string> headerValue(const std::string &header,
                                       const std::string &key) {
  for (const char *quote : {"'", "\""}) {
    std::string needle = quote + key + quote;
    size_t p = header.find(needle);
    if (p == std::string::npos)
      continue;
    p = header.find_first_not_of(" ", p + needle.size());
    if (p == std::string::npos || header[p] != ':')
      return std::nullopt;
    p = header.find_first_not_of(" ", p + 1);
    if (p == std::string::npos)
      return std::nullopt;
    return header.substr(p);
  }
  return std::nullopt;
}

} // namespace

std::string tang::runtime::npyShapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Expected<Npy> tang::runtime::readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::failure("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  auto bad = [&](const std::string &msg) {
    return Error::failure(path + ": " + msg);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad("not a .npy file (bad magic string)");
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen = 0, offset = 0;
  if (major == 1) {
    headerLen =
        static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated .npy header");
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return bad("unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < offset + headerLen)
    return bad("truncated .npy header");
  std::string header = bytes.substr(offset, headerLen);

  Npy npy;
  std::optional<std::string> descr = headerValue(header, "descr");
  if (!descr || descr->empty() || ((*descr)[0] != '\'' && (*descr)[0] != '"'))
    return bad("malformed .npy header: no 'descr'");
  std::string d = descr->substr(1, descr->find((*descr)[0], 1) - 1);
  if (!d.empty() && (d[0] == '<' || d[0] == '|' || d[0] == '='))
    d = d.substr(1);
  else if (!d.empty() && d[0] == '>' && d.size() == 3 && d[2] != '1')
    return bad("big-endian data ('" + d + "') is not supported");
  else if (!d.empty() && d[0] == '>')
    d = d.substr(1);
  if (d.size() != 2 || !std::isdigit(static_cast<unsigned char>(d[1])))
    return bad("unsupported dtype '" + d + "'");
  npy.descr = d;
  npy.typestr = descr->substr(1, descr->find((*descr)[0], 1) - 1);

  std::optional<std::string> fortran = headerValue(header, "fortran_order");
  if (!fortran ||
      (fortran->rfind("False", 0) != 0 && fortran->rfind("True", 0) != 0))
    return bad("malformed .npy header: no 'fortran_order'");
  if (fortran->rfind("True", 0) == 0)
    return bad("Fortran-order arrays are not supported (save with "
               "numpy.ascontiguousarray)");

  std::optional<std::string> shape = headerValue(header, "shape");
  if (!shape || shape->empty() || (*shape)[0] != '(' ||
      shape->find(')') == std::string::npos)
    return bad("malformed .npy header: no 'shape'");
  std::string dims = shape->substr(1, shape->find(')') - 1);
  int64_t count = 1;
  std::stringstream parts(dims);
  std::string part;
  while (std::getline(parts, part, ',')) {
    part.erase(0, part.find_first_not_of(" "));
    part.erase(part.find_last_not_of(" ") + 1);
    if (part.empty())
      continue;
    char *end = nullptr;
    long long n = std::strtoll(part.c_str(), &end, 10);
    if (*end || n < 0)
      return bad("malformed .npy header: bad dimension '" + part + "'");
    if (n && count > (int64_t(1) << 40) / n)
      return bad("array too large");
    count *= n;
    npy.shape.push_back(n);
  }
  size_t expected = size_t(count) * size_t(d[1] - '0');
  size_t have = bytes.size() - offset - headerLen;
  if (have != expected)
    return bad("the shape " + npyShapeString(npy.shape) + " needs " +
               std::to_string(expected) + " data bytes, the file has " +
               std::to_string(have));
  npy.data = bytes.substr(offset + headerLen);
  return npy;
}

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

Error tang::runtime::writeNpy(const std::string &path, const std::string &descr,
                              const std::vector<int64_t> &shape,
                              const std::string &data) {
  std::string header =
      "{'descr': '" + descr +
      "', 'fortran_order': False, 'shape': " + npyShapeString(shape) + ", }";
  // Pad with spaces and a newline so that the data starts 64-byte aligned.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out += data;
  std::ofstream f(path, std::ios::binary);
  if (!f)
    return Error::failure("cannot create " + path + ": " +
                          std::strerror(errno));
  f.write(out.data(), std::streamsize(out.size()));
  if (!f)
    return Error::failure("cannot write " + path);
  return Error::success();
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

double tang::runtime::decodeHalf(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
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
