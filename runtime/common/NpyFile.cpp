//===- NpyFile.cpp - the .npy file format -----------------------*- C++ -*-===//

#include "NpyFile.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
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

bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

} // namespace

std::string tang::runtime::npyShapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Expected<Npy> tang::runtime::parseNpy(const std::string &bytes) {
  auto bad = [](const std::string &msg) { return Error::failure(msg); };
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
  size_t close = descr->find((*descr)[0], 1);
  if (close == std::string::npos)
    return bad("malformed .npy header: unterminated 'descr'");
  npy.typestr = descr->substr(1, close - 1);
  std::string d = npy.typestr;
  // One-byte types have no byte order; wider ones must be little-endian.
  if (!d.empty() && (d[0] == '<' || d[0] == '|' || d[0] == '='))
    d = d.substr(1);
  else if (!d.empty() && d[0] == '>' && d.size() == 3 && d[2] == '1')
    d = d.substr(1);
  else if (!d.empty() && d[0] == '>')
    return bad("big-endian .npy data ('" + d + "') is not supported");
  if (d.size() != 2 || !std::isalpha(static_cast<unsigned char>(d[0])) ||
      d[1] < '1' || d[1] > '8')
    return bad("unsupported .npy dtype '" + d + "'");
  npy.descr = d;

  std::optional<std::string> fortran = headerValue(header, "fortran_order");
  if (!fortran)
    return bad("malformed .npy header: no 'fortran_order'");
  if (startsWith(*fortran, "True"))
    return bad("Fortran-order .npy arrays are not supported (save with "
               "numpy.ascontiguousarray)");
  if (!startsWith(*fortran, "False"))
    return bad("malformed .npy header: bad 'fortran_order'");

  std::optional<std::string> shape = headerValue(header, "shape");
  if (!shape || shape->empty() || (*shape)[0] != '(')
    return bad("malformed .npy header: no 'shape'");
  if (shape->find(')') == std::string::npos)
    return bad("malformed .npy header: unterminated 'shape'");
  std::string dims = shape->substr(1, shape->find(')') - 1);
  uint64_t count = 1;
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
    if (n && count > (uint64_t(1) << 40) / uint64_t(n))
      return bad(".npy array is too large");
    count *= uint64_t(n);
    npy.shape.push_back(n);
  }
  size_t expected = size_t(count) * size_t(d[1] - '0');
  size_t have = bytes.size() - offset - headerLen;
  if (have < expected)
    return bad("truncated .npy data: shape " + npyShapeString(npy.shape) +
               " needs " + std::to_string(expected) + " bytes, file has " +
               std::to_string(have));
  if (have > expected)
    return bad(".npy file has " + std::to_string(have - expected) +
               " bytes after the data");
  npy.data = bytes.substr(offset + headerLen);
  return npy;
}

Expected<Npy> tang::runtime::readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::failure("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  Expected<Npy> npy = parseNpy(ss.str());
  if (!npy)
    return npy.takeError().withContext(path);
  return npy;
}

Error tang::runtime::writeNpy(const std::string &path,
                              const std::string &typestr,
                              const std::vector<int64_t> &shape,
                              const std::string &data) {
  std::string header =
      "{'descr': '" + typestr +
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
