//===- Npy.cpp - NumPy .npy files -------------------------------*- C++ -*-===//
//
// The .npy format: the magic "\x93NUMPY", a version (1.0: 2-byte header
// length; 2.0 and 3.0: 4-byte), then a Python dict literal
// {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a newline, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::tang;

static llvm::Error npyError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Decodes an IEEE binary16 value.
static double halfToDouble(uint16_t h) {
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

/// Finds `'key':` in the header dict and returns the text after it.
static std::optional<StringRef> findKey(StringRef header, StringRef key) {
  for (StringRef quote : {"'", "\""}) {
    std::string needle = (quote + key + quote).str();
    size_t pos = header.find(needle);
    if (pos == StringRef::npos)
      continue;
    StringRef rest = header.drop_front(pos + needle.size()).ltrim();
    if (!rest.consume_front(":"))
      return std::nullopt;
    return rest.ltrim();
  }
  return std::nullopt;
}

StringRef mlir::tang::npyDtypeName(StringRef dtype) {
  return llvm::StringSwitch<StringRef>(dtype)
      .Case("f8", "float64")
      .Case("f4", "float32")
      .Case("f2", "float16")
      .Case("i8", "int64")
      .Case("i4", "int32")
      .Case("i2", "int16")
      .Case("i1", "int8")
      .Case("u1", "uint8")
      .Case("b1", "bool")
      .Default("");
}

llvm::Expected<NpyArray> mlir::tang::parseNpy(StringRef bytes) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || !bytes.starts_with(StringRef(kMagic, 6)))
    return npyError("not a .npy file (bad magic string)");
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen =
        static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError("truncated .npy header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return npyError("unsupported .npy version " + Twine(major));
  }
  if (bytes.size() < offset + headerLen)
    return npyError("truncated .npy header");
  StringRef header = bytes.substr(offset, headerLen);
  StringRef data = bytes.drop_front(offset + headerLen);

  // descr
  std::optional<StringRef> descr = findKey(header, "descr");
  if (!descr || descr->empty() ||
      (descr->front() != '\'' && descr->front() != '"'))
    return npyError("malformed .npy header: no 'descr'");
  char q = descr->front();
  StringRef d = descr->drop_front();
  d = d.take_until([&](char c) { return c == q; });
  NpyArray arr;
  char order = d.empty() ? '?' : d.front();
  if (order == '<' || order == '|' || order == '=')
    d = d.drop_front();
  else if (order == '>')
    return npyError("big-endian .npy data ('" + d + "') is not supported");
  if (npyDtypeName(d).empty())
    return npyError("unsupported .npy dtype '" + d +
                    "' (expected float64, float32, float16, int64, int32, "
                    "int16, int8, uint8 or bool)");
  arr.dtype = d.str();

  // fortran_order
  std::optional<StringRef> fortran = findKey(header, "fortran_order");
  if (!fortran)
    return npyError("malformed .npy header: no 'fortran_order'");
  if (fortran->starts_with("True"))
    return npyError("Fortran-order .npy arrays are not supported (save with "
                    "numpy.ascontiguousarray)");
  if (!fortran->starts_with("False"))
    return npyError("malformed .npy header: bad 'fortran_order'");

  // shape
  std::optional<StringRef> shape = findKey(header, "shape");
  if (!shape || !shape->starts_with("("))
    return npyError("malformed .npy header: no 'shape'");
  StringRef dims =
      shape->drop_front().take_until([](char c) { return c == ')'; });
  if (dims.size() == shape->size() - 1)
    return npyError("malformed .npy header: unterminated 'shape'");
  SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  uint64_t count = 1;
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t n;
    if (part.getAsInteger(10, n) || n < 0)
      return npyError("malformed .npy header: bad dimension '" + part + "'");
    arr.shape.push_back(n);
    if (n && count > (uint64_t(1) << 40) / uint64_t(n))
      return npyError(".npy array is too large");
    count *= n;
  }

  size_t width = arr.dtype[1] - '0';
  if (data.size() < count * width)
    return npyError("truncated .npy data: shape needs " + Twine(count * width) +
                    " bytes, file has " + Twine(data.size()));
  if (data.size() > count * width)
    return npyError(".npy file has " + Twine(data.size() - count * width) +
                    " bytes after the data");
  arr.data.resize(count);
  const char *p = data.data();
  for (uint64_t i = 0; i < count; ++i, p += width) {
    double v;
    if (arr.dtype == "f8") {
      std::memcpy(&v, p, 8);
    } else if (arr.dtype == "f4") {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else if (arr.dtype == "f2") {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v = halfToDouble(h);
    } else if (arr.dtype == "i8") {
      int64_t x;
      std::memcpy(&x, p, 8);
      v = static_cast<double>(x);
    } else if (arr.dtype == "i4") {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else if (arr.dtype == "i2") {
      int16_t x;
      std::memcpy(&x, p, 2);
      v = x;
    } else if (arr.dtype == "i1") {
      v = static_cast<int8_t>(*p);
    } else { // u1, b1
      v = static_cast<uint8_t>(*p);
      if (arr.dtype == "b1" && v > 1)
        return npyError("bool .npy data holds a byte other than 0 or 1");
    }
    arr.data[i] = v;
  }
  return arr;
}

llvm::Expected<NpyArray> mlir::tang::readNpy(StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return npyError("cannot read '" + path + "': " + buf.getError().message());
  auto arr = parseNpy((*buf)->getBuffer());
  if (!arr)
    return npyError(path + ": " + llvm::toString(arr.takeError()));
  return arr;
}

llvm::Error mlir::tang::writeNpy(StringRef path, const Tensor &t) {
  StringRef descr = "<f8";
  unsigned width = 8;
  if (t.elementType.isSignlessInteger(32)) {
    descr = "<i4";
    width = 4;
  } else if (t.elementType.isSignlessInteger(8)) {
    descr = "|i1";
    width = 1;
  } else if (t.elementType.isSignlessInteger(1)) {
    descr = "|b1";
    width = 1;
  }
  std::string header;
  llvm::raw_string_ostream hs(header);
  hs << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (int64_t n : t.shape)
    hs << n << (t.shape.size() == 1 ? ",)" : ", ");
  if (t.shape.size() != 1) {
    if (!t.shape.empty())
      header.resize(header.size() - 2);
    header += ")";
  }
  header += ", }";
  // Pad so that magic + version + length + header is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return npyError("cannot write '" + path + "': " + ec.message());
  os << StringRef("\x93NUMPY\x01\x00", 8);
  os << static_cast<char>(header.size() & 0xff)
     << static_cast<char>(header.size() >> 8);
  os << header;
  for (double v : t.data) {
    if (width == 8) {
      os.write(reinterpret_cast<const char *>(&v), 8);
    } else if (width == 4) {
      int32_t x = static_cast<int32_t>(v);
      os.write(reinterpret_cast<const char *>(&x), 4);
    } else {
      int8_t x = static_cast<int8_t>(v);
      os.write(reinterpret_cast<const char *>(&x), 1);
    }
  }
  os.close();
  if (os.has_error())
    return npyError("cannot write '" + path + "'");
  return llvm::Error::success();
}
