//===- Npy.cpp - NumPy .npy files -------------------------------*- C++ -*-===//
//
// The interpreter's .npy arrays: the data widened to float64 on reading,
// written back at the tensor's width. The file format is read and written
// by runtime/common/NpyFile.cpp, the one implementation the host runtimes
// share.
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Npy.h"

#include "NpyFile.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::tang;
namespace runtime = ::tang::runtime;

static llvm::Error npyError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
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
  runtime::Expected<runtime::Npy> npy = runtime::parseNpy(bytes.str());
  if (!npy)
    return npyError(npy.error().message());
  if (npyDtypeName(npy->descr).empty())
    return npyError("unsupported .npy dtype '" + npy->descr +
                    "' (expected float64, float32, float16, int64, int32, "
                    "int16, int8, uint8 or bool)");
  NpyArray arr;
  arr.dtype = npy->descr;
  arr.shape.assign(npy->shape.begin(), npy->shape.end());
  size_t width = arr.dtype[1] - '0';
  size_t count = npy->data.size() / width;
  arr.data.resize(count);
  const char *p = npy->data.data();
  for (size_t i = 0; i < count; ++i, p += width) {
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
      v = runtime::decodeHalf(h);
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
  // Floats as float64, integers at their width.
  std::string typestr = "<f8";
  unsigned width = 8;
  if (t.elementType.isSignlessInteger(32)) {
    typestr = "<i4";
    width = 4;
  } else if (t.elementType.isSignlessInteger(8)) {
    typestr = "|i1";
    width = 1;
  } else if (t.elementType.isSignlessInteger(1)) {
    typestr = "|b1";
    width = 1;
  }
  std::string data(t.data.size() * width, '\0');
  char *out = data.data();
  for (double v : t.data) {
    if (width == 8) {
      std::memcpy(out, &v, 8);
    } else if (width == 4) {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(out, &x, 4);
    } else {
      int8_t x = static_cast<int8_t>(v);
      std::memcpy(out, &x, 1);
    }
    out += width;
  }
  runtime::Error e = runtime::writeNpy(
      path.str(), typestr, std::vector<int64_t>(t.shape.begin(), t.shape.end()),
      data);
  if (e)
    return npyError(e.message());
  return llvm::Error::success();
}
