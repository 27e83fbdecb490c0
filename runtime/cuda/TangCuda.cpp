//===- TangCuda.cpp - Run tang CUDA bundles on the driver API ---*- C++ -*-===//
//
// The driver is reached only through a table of function pointers filled by
// dlsym from libcuda.so.1. The names come from cuda.h's own macros
// (cuMemAlloc is cuMemAlloc_v2 there), so each pointer has the type and the
// symbol version that the headers declare.
//
//===----------------------------------------------------------------------===//

#include "TangCuda.h"

#include <dlfcn.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

using namespace tang::cuda;

//===----------------------------------------------------------------------===//
// Error
//===----------------------------------------------------------------------===//

Error Error::failure(std::string message) {
  Error e;
  e.failed = true;
  e.text = message.empty() ? "unknown error" : std::move(message);
  return e;
}

Error Error::withContext(const std::string &context) && {
  if (failed)
    text = context + ": " + text;
  return std::move(*this);
}

//===----------------------------------------------------------------------===//
// The driver table
//===----------------------------------------------------------------------===//

namespace {

#define TANG_STR2(x) #x
/// The symbol name of a driver entry point after cuda.h's renaming macros.
#define TANG_STR(x) TANG_STR2(x)

/// Every driver entry point used here. cuda.h maps some names to versioned
/// symbols (cuMemAlloc -> cuMemAlloc_v2); the table uses the mapped names.
#define TANG_CU_FUNCTIONS(X)                                                   \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD8)                                                                \
  X(cuLaunchKernel)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)

/// Function pointers into the driver, filled once.
struct Driver {
#define TANG_DECLARE(name) decltype(&::name) name = nullptr;
  TANG_CU_FUNCTIONS(TANG_DECLARE)
#undef TANG_DECLARE
  /// cuEventElapsedTime_v2 (CUDA 12.8+) or, on older drivers, the original
  /// with the same signature.
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;

  /// Why the driver cannot be used; empty when it can.
  std::string failure;
};

/// The library to load: $TANG_LIBCUDA, else libcuda.so.1.
std::string libraryName() {
  const char *env = std::getenv("TANG_LIBCUDA");
  return env && *env ? env : "libcuda.so.1";
}

/// `r` as "NAME (description)", asking the driver `d` for both.
std::string statusText(const Driver &d, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUresult " + std::to_string(int(r));
  if (text)
    s += " (" + std::string(text) + ")";
  return s;
}

/// Loads and initializes the driver (once per process).
Driver loadDriver() {
  Driver d;
  std::string lib = libraryName();
  void *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    d.failure = "no CUDA driver (" + lib + " not found)";
    return d;
  }
  std::string missing;
#define TANG_RESOLVE(name)                                                     \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(handle, TANG_STR(name)));  \
  if (!d.name)                                                                 \
    missing += std::string(missing.empty() ? "" : ", ") + TANG_STR(name);
  TANG_CU_FUNCTIONS(TANG_RESOLVE)
#undef TANG_RESOLVE
  void *elapsed = dlsym(handle, TANG_STR(cuEventElapsedTime));
  if (!elapsed)
    elapsed = dlsym(handle, "cuEventElapsedTime");
  d.eventElapsedTime = reinterpret_cast<decltype(d.eventElapsedTime)>(elapsed);
  if (!elapsed)
    missing += std::string(missing.empty() ? "" : ", ") + "cuEventElapsedTime";
  if (!missing.empty()) {
    d.failure = "the CUDA driver " + lib + " is too old: it lacks " + missing;
    return d;
  }
  CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    d.failure = "no CUDA device";
  else if (r == CUDA_ERROR_STUB_LIBRARY)
    d.failure = "no CUDA driver (" + lib + " is the CUDA toolkit's stub)";
  else if (r != CUDA_SUCCESS)
    d.failure =
        "the CUDA driver failed to initialize: cuInit: " + statusText(d, r);
  return d;
}

/// The driver table; check `failure` before use.
const Driver &driver() {
  static const Driver d = loadDriver();
  return d;
}

/// The loaded driver, or the error that prevents its use.
Error requireDriver() {
  const Driver &d = driver();
  return d.failure.empty() ? Error::success() : Error::failure(d.failure);
}

/// Success, or a failure naming the call `what` and the status `r`.
Error check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return Error::success();
  return Error::failure(std::string(what) + " failed: " + resultString(r));
}

} // namespace

std::string tang::cuda::resultString(CUresult result) {
  return statusText(driver(), result);
}

Expected<int> tang::cuda::driverVersion() {
  if (Error e = requireDriver())
    return e;
  int v = 0;
  if (Error e = check(driver().cuDriverGetVersion(&v), "cuDriverGetVersion"))
    return e;
  return v;
}

Expected<int> tang::cuda::deviceCount() {
  if (Error e = requireDriver())
    return e;
  int n = 0;
  if (Error e = check(driver().cuDeviceGetCount(&n), "cuDeviceGetCount"))
    return e;
  return n;
}

bool tang::cuda::available(std::string *reason) {
  Expected<int> n = deviceCount();
  std::string why;
  if (!n)
    why = n.error().message();
  else if (*n == 0)
    why = "no CUDA device";
  if (reason)
    *reason = why;
  return why.empty();
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

Expected<Context> Context::create(int ordinal) {
  Expected<int> n = deviceCount();
  if (!n)
    return n.takeError();
  if (*n == 0)
    return Error::failure("no CUDA device");
  if (ordinal < 0 || ordinal >= *n)
    return Error::failure("no CUDA device #" + std::to_string(ordinal) +
                          " (the driver sees " + std::to_string(*n) + ")");
  const Driver &d = driver();
  CUdevice dev = 0;
  if (Error e = check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet"))
    return e;
  CUcontext ctx = nullptr;
  if (Error e = check(d.cuDevicePrimaryCtxRetain(&ctx, dev),
                      "cuDevicePrimaryCtxRetain"))
    return e;
  Context context(ordinal, dev, ctx);
  if (Error e = context.makeCurrent())
    return e;
  return context;
}

Context::Context(Context &&other) noexcept
    : ord(other.ord), dev(other.dev), ctx(other.ctx) {
  other.ctx = nullptr;
}

// Swapping hands this object's old context to `other`, which releases it.
Context &Context::operator=(Context &&other) noexcept {
  std::swap(ord, other.ord);
  std::swap(dev, other.dev);
  std::swap(ctx, other.ctx);
  return *this;
}

Context::~Context() {
  if (ctx)
    driver().cuDevicePrimaryCtxRelease(dev);
  ctx = nullptr;
}

Error Context::makeCurrent() const {
  return check(driver().cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

Error Context::synchronize() const {
  if (Error e = makeCurrent())
    return e;
  return check(driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

std::string Context::deviceName() const {
  char name[256] = {0};
  if (driver().cuDeviceGetName(name, sizeof(name) - 1, dev) != CUDA_SUCCESS)
    return "?";
  return name;
}

std::pair<int, int> Context::computeCapability() const {
  int major = 0, minor = 0;
  driver().cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  driver().cuDeviceGetAttribute(
      &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  return {major, minor};
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// The whole file at `path`.
static Expected<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::failure("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error::failure("cannot read " + path);
  return ss.str();
}

/// A NUL-terminated log buffer's text, without trailing blank space.
static std::string logText(const std::vector<char> &buf) {
  std::string s(buf.data(), strnlen(buf.data(), buf.size()));
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  return s;
}

Expected<Module> Module::loadData(const std::string &image,
                                  const std::string &name) {
  if (Error e = requireDriver())
    return e;
  // The JIT writes its logs into these buffers; the size options come back
  // holding the bytes written.
  constexpr size_t kLogBytes = 1 << 16;
  std::vector<char> errorLog(kLogBytes, 0), infoLog(kLogBytes, 0);
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1)),
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes - 1))};
  Module m;
  m.label = name;
  // std::string keeps a NUL after the data, which PTX text needs.
  CUresult r =
      driver().cuModuleLoadDataEx(&m.mod, image.c_str(), 4, options, values);
  if (r != CUDA_SUCCESS) {
    m.mod = nullptr;
    std::string msg = "cannot load " + name +
                      ": cuModuleLoadDataEx failed: " + resultString(r);
    std::string log = logText(errorLog);
    if (!log.empty())
      msg += "\nJIT error log:\n" + log;
    return Error::failure(msg);
  }
  m.info = logText(infoLog);
  return m;
}

Expected<Module> Module::loadFile(const std::string &path) {
  Expected<std::string> image = readFile(path);
  if (!image)
    return image.takeError();
  return loadData(*image, path);
}

Module::Module(Module &&other) noexcept
    : mod(other.mod), label(std::move(other.label)),
      info(std::move(other.info)) {
  other.mod = nullptr;
}

Module &Module::operator=(Module &&other) noexcept {
  std::swap(mod, other.mod);
  std::swap(label, other.label);
  std::swap(info, other.info);
  return *this;
}

Module::~Module() {
  if (mod)
    driver().cuModuleUnload(mod);
  mod = nullptr;
}

Expected<CUfunction> Module::function(const std::string &name) const {
  CUfunction f = nullptr;
  CUresult r = driver().cuModuleGetFunction(&f, mod, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return Error::failure("no kernel '" + name + "' in " + label);
  if (Error e = check(r, "cuModuleGetFunction"))
    return std::move(e).withContext("kernel '" + name + "' in " + label);
  return f;
}

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

Expected<Buffer> Buffer::allocate(size_t bytes) {
  if (Error e = requireDriver())
    return e;
  Buffer b;
  if (bytes == 0)
    return b;
  if (Error e = check(driver().cuMemAlloc(&b.dptr, bytes), "cuMemAlloc"))
    return std::move(e).withContext("allocating " + std::to_string(bytes) +
                                    " bytes");
  b.bytes = bytes;
  return b;
}

Buffer::Buffer(Buffer &&other) noexcept : dptr(other.dptr), bytes(other.bytes) {
  other.dptr = 0;
  other.bytes = 0;
}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  std::swap(dptr, other.dptr);
  std::swap(bytes, other.bytes);
  return *this;
}

Buffer::~Buffer() {
  if (dptr)
    driver().cuMemFree(dptr);
  dptr = 0;
}

Error Buffer::upload(const void *host, size_t n, size_t offset) {
  if (offset > bytes || n > bytes - offset)
    return Error::failure("upload of " + std::to_string(n) + " bytes at " +
                          std::to_string(offset) + " overruns a buffer of " +
                          std::to_string(bytes));
  if (n == 0)
    return Error::success();
  return check(driver().cuMemcpyHtoD(dptr + offset, host, n), "cuMemcpyHtoD");
}

Error Buffer::download(void *host, size_t n, size_t offset) const {
  if (offset > bytes || n > bytes - offset)
    return Error::failure("download of " + std::to_string(n) + " bytes at " +
                          std::to_string(offset) + " overruns a buffer of " +
                          std::to_string(bytes));
  if (n == 0)
    return Error::success();
  return check(driver().cuMemcpyDtoH(host, dptr + offset, n), "cuMemcpyDtoH");
}

Error Buffer::fill(uint8_t value) {
  if (bytes == 0)
    return Error::success();
  return check(driver().cuMemsetD8(dptr, value, bytes), "cuMemsetD8");
}

//===----------------------------------------------------------------------===//
// Launches and timing
//===----------------------------------------------------------------------===//

Error tang::cuda::launch(CUfunction function, Dim3 grid, Dim3 block,
                         unsigned sharedBytes, void **params, CUstream stream) {
  if (Error e = requireDriver())
    return e;
  return check(driver().cuLaunchKernel(function, grid.x, grid.y, grid.z,
                                       block.x, block.y, block.z, sharedBytes,
                                       stream, params, nullptr),
               "cuLaunchKernel");
}

Error tang::cuda::setMaxDynamicSharedBytes(CUfunction function,
                                           unsigned bytes) {
  if (Error e = requireDriver())
    return e;
  return check(driver().cuFuncSetAttribute(
                   function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   static_cast<int>(bytes)),
               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

Expected<Timer> Timer::create() {
  if (Error e = requireDriver())
    return e;
  Timer t;
  if (Error e = check(driver().cuEventCreate(&t.begin, CU_EVENT_DEFAULT),
                      "cuEventCreate"))
    return e;
  if (Error e = check(driver().cuEventCreate(&t.end, CU_EVENT_DEFAULT),
                      "cuEventCreate"))
    return e;
  return t;
}

Timer::Timer(Timer &&other) noexcept : begin(other.begin), end(other.end) {
  other.begin = other.end = nullptr;
}

Timer &Timer::operator=(Timer &&other) noexcept {
  std::swap(begin, other.begin);
  std::swap(end, other.end);
  return *this;
}

Timer::~Timer() {
  if (begin)
    driver().cuEventDestroy(begin);
  if (end)
    driver().cuEventDestroy(end);
  begin = end = nullptr;
}

Error Timer::start(CUstream stream) {
  return check(driver().cuEventRecord(begin, stream), "cuEventRecord");
}

Error Timer::stop(CUstream stream) {
  return check(driver().cuEventRecord(end, stream), "cuEventRecord");
}

Expected<float> Timer::elapsedMs() const {
  if (Error e = check(driver().cuEventSynchronize(end), "cuEventSynchronize"))
    return e;
  float ms = 0;
  if (Error e = check(driver().eventElapsedTime(&ms, begin, end),
                      "cuEventElapsedTime"))
    return e;
  return ms;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

/// A JSON value. Numbers keep whether they were written as integers.
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  /// Set when the number is written without fraction or exponent and fits.
  std::optional<int64_t> integer;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  /// The member `key` of an object, or null.
  const Json *get(const std::string &key) const {
    for (const auto &[k, v] : object)
      if (k == key)
        return &v;
    return nullptr;
  }
};

/// The JSON type name of `kind`, for error messages.
const char *kindName(Json::Kind kind) {
  switch (kind) {
  case Json::Kind::Null:
    return "null";
  case Json::Kind::Bool:
    return "a boolean";
  case Json::Kind::Number:
    return "a number";
  case Json::Kind::String:
    return "a string";
  case Json::Kind::Array:
    return "an array";
  case Json::Kind::Object:
    return "an object";
  }
  return "?";
}

/// A strict RFC 8259 parser (no comments, no trailing commas), reporting the
/// line and column of the first error.
class JsonParser {
public:
  explicit JsonParser(const std::string &text) : s(text) {}

  /// Parses the whole text as one value.
  Expected<Json> parseDocument() {
    Json v;
    if (!parseValue(v, 0))
      return failure();
    skipSpace();
    if (pos != s.size()) {
      fail("unexpected text after the JSON value");
      return failure();
    }
    return v;
  }

private:
  static constexpr int kMaxDepth = 64;

  Error failure() const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < errorPos && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Error::failure("invalid JSON at line " + std::to_string(line) +
                          ", column " + std::to_string(col) + ": " + message);
  }

  bool fail(const std::string &msg) {
    if (message.empty()) {
      message = msg;
      errorPos = pos;
    }
    return false;
  }

  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseValue(Json &v, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    skipSpace();
    if (pos >= s.size())
      return fail("unexpected end of input");
    char c = s[pos];
    if (c == '{')
      return parseObject(v, depth);
    if (c == '[')
      return parseArray(v, depth);
    if (c == '"') {
      v.kind = Json::Kind::String;
      return parseString(v.string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(v);
    if (consumeWord("true")) {
      v.kind = Json::Kind::Bool;
      v.boolean = true;
      return true;
    }
    if (consumeWord("false")) {
      v.kind = Json::Kind::Bool;
      return true;
    }
    if (consumeWord("null"))
      return true;
    return fail(std::string("unexpected character '") + c + "'");
  }

  bool parseObject(Json &v, int depth) {
    v.kind = Json::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a member name in quotes");
      std::string key;
      if (!parseString(key))
        return false;
      if (v.get(key))
        return fail("duplicate member \"" + key + "\"");
      skipSpace();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':' after a member name");
      ++pos;
      Json member;
      if (!parseValue(member, depth + 1))
        return false;
      v.object.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(Json &v, int depth) {
    v.kind = Json::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      Json element;
      if (!parseValue(element, depth + 1))
        return false;
      v.array.push_back(std::move(element));
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  /// Appends code point `cp` to `out` as UTF-8.
  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  bool parseHex4(uint32_t &cp) {
    if (pos + 4 > s.size())
      return fail("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= c - '0';
      else if (c >= 'a' && c <= 'f')
        cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        cp |= c - 'A' + 10;
      else
        return fail("bad \\u escape");
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (pos >= s.size())
        return fail("unterminated string");
      char c = s[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("unterminated string");
      char e = s[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00) {
          uint32_t low;
          if (!consumeWord("\\u") || !parseHex4(low) || low < 0xdc00 ||
              low >= 0xe000)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return fail("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(Json &v) {
    size_t start = pos;
    bool integral = true;
    if (s[pos] == '-')
      ++pos;
    if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos])))
      return fail("bad number");
    if (s[pos] == '0' && pos + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[pos + 1])))
      return fail("bad number (leading zero)");
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])))
      ++pos;
    if (pos < s.size() && s[pos] == '.') {
      integral = false;
      ++pos;
      if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos])))
        return fail("bad number (no digits after '.')");
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])))
        ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      integral = false;
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos])))
        return fail("bad number (no exponent digits)");
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])))
        ++pos;
    }
    std::string text = s.substr(start, pos - start);
    v.kind = Json::Kind::Number;
    v.number = std::strtod(text.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long n = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0)
        v.integer = n;
    }
    return true;
  }

  const std::string &s;
  size_t pos = 0;
  std::string message;
  size_t errorPos = 0;
};

//===----------------------------------------------------------------------===//
// Manifest validation
//===----------------------------------------------------------------------===//

/// Reads the manifest's JSON into a Manifest, naming the JSON path of the
/// first problem ("functions[0].launches[1].args[2]: ...").
class ManifestReader {
public:
  explicit ManifestReader(std::string where) : where(std::move(where)) {}

  Expected<Manifest> read(const Json &root) {
    Manifest m;
    if (!readManifest(root, m))
      return Error::failure(where + ": " + error);
    return m;
  }

private:
  bool fail(const std::string &path, const std::string &msg) {
    error = path.empty() ? msg : path + ": " + msg;
    return false;
  }

  /// The member `key` of object `v` (at `path`) of kind `kind`, or null
  /// after recording an error.
  const Json *member(const Json &v, const std::string &path, const char *key,
                     Json::Kind kind) {
    const Json *m = v.get(key);
    if (!m) {
      fail(path, std::string("missing field \"") + key + "\"");
      return nullptr;
    }
    if (m->kind != kind) {
      fail(join(path, key), std::string("expected ") + kindName(kind) +
                                ", got " + kindName(m->kind));
      return nullptr;
    }
    return m;
  }

  static std::string join(const std::string &path, const std::string &key) {
    return path.empty() ? key : path + "." + key;
  }

  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  /// Reads an integer in [lo, hi] at `path`.
  bool readInt(const Json &v, const std::string &path, int64_t lo, int64_t hi,
               int64_t &out) {
    if (v.kind != Json::Kind::Number || !v.integer)
      return fail(path,
                  std::string("expected an integer, got ") +
                      (v.kind == Json::Kind::Number ? "a non-integer number"
                                                    : kindName(v.kind)));
    if (*v.integer < lo || *v.integer > hi)
      return fail(path, std::to_string(*v.integer) + " is out of range [" +
                            std::to_string(lo) + ", " + std::to_string(hi) +
                            "]");
    out = *v.integer;
    return true;
  }

  /// Reads a non-empty string member.
  bool readName(const Json &v, const std::string &path, const char *key,
                std::string &out) {
    const Json *m = member(v, path, key, Json::Kind::String);
    if (!m)
      return false;
    if (m->string.empty())
      return fail(join(path, key), "must not be empty");
    out = m->string;
    return true;
  }

  bool readBuffer(const Json &v, const std::string &path, bool isTemporary,
                  BufferSpec &b) {
    if (v.kind != Json::Kind::Object)
      return fail(path,
                  std::string("expected an object, got ") + kindName(v.kind));
    if (isTemporary) {
      b.role = BufferSpec::Role::Temporary;
    } else {
      const Json *role = member(v, path, "role", Json::Kind::String);
      if (!role)
        return false;
      if (role->string == "input")
        b.role = BufferSpec::Role::Input;
      else if (role->string == "output")
        b.role = BufferSpec::Role::Output;
      else
        return fail(join(path, "role"), "unknown role \"" + role->string +
                                            "\" (expected \"input\" or "
                                            "\"output\")");
    }
    const Json *shape = member(v, path, "shape", Json::Kind::Array);
    if (!shape)
      return false;
    // Bound the element count so that byte sizes cannot overflow.
    constexpr int64_t kMaxElements = int64_t(1) << 48;
    int64_t count = 1;
    for (size_t i = 0; i < shape->array.size(); ++i) {
      int64_t d;
      if (!readInt(shape->array[i], index(join(path, "shape"), i), 0,
                   kMaxElements, d))
        return false;
      if (d && count > kMaxElements / d)
        return fail(join(path, "shape"), "too many elements");
      count *= d;
      b.shape.push_back(d);
    }
    const Json *dtype = member(v, path, "dtype", Json::Kind::String);
    if (!dtype)
      return false;
    std::optional<DType> t = parseDType(dtype->string);
    if (!t)
      return fail(join(path, "dtype"),
                  "unknown dtype \"" + dtype->string +
                      "\" (expected f64, f32, f16, bf16, i32, i8 or i1)");
    b.dtype = *t;
    return true;
  }

  bool readDim3(const Json &v, const std::string &path, const char *key,
                Dim3 &out) {
    const Json *a = member(v, path, key, Json::Kind::Array);
    if (!a)
      return false;
    if (a->array.size() != 3)
      return fail(join(path, key),
                  "expected 3 sizes, got " + std::to_string(a->array.size()));
    int64_t d[3];
    for (size_t i = 0; i < 3; ++i)
      if (!readInt(a->array[i], index(join(path, key), i), 1,
                   std::numeric_limits<int32_t>::max(), d[i]))
        return false;
    out = Dim3{unsigned(d[0]), unsigned(d[1]), unsigned(d[2])};
    return true;
  }

  bool readLaunch(const Json &v, const std::string &path, const FunctionSpec &f,
                  LaunchSpec &l) {
    if (v.kind != Json::Kind::Object)
      return fail(path,
                  std::string("expected an object, got ") + kindName(v.kind));
    if (!readName(v, path, "kernel", l.kernel) ||
        !readDim3(v, path, "grid", l.grid) ||
        !readDim3(v, path, "block", l.block))
      return false;
    const Json *shared = v.get("shared_bytes");
    if (!shared)
      return fail(path, "missing field \"shared_bytes\"");
    int64_t bytes;
    if (!readInt(*shared, join(path, "shared_bytes"), 0,
                 std::numeric_limits<int32_t>::max(), bytes))
      return false;
    l.sharedBytes = unsigned(bytes);
    const Json *args = member(v, path, "args", Json::Kind::Array);
    if (!args)
      return false;
    for (size_t i = 0; i < args->array.size(); ++i) {
      const Json &a = args->array[i];
      std::string p = index(join(path, "args"), i);
      if (a.kind != Json::Kind::Object)
        return fail(p,
                    std::string("expected an object, got ") + kindName(a.kind));
      const Json *arg = a.get("arg"), *temp = a.get("temp");
      if ((arg != nullptr) == (temp != nullptr) || a.object.size() != 1)
        return fail(p, "expected exactly one of {\"arg\": i} or {\"temp\": i}");
      LaunchArg la;
      la.isTemporary = temp != nullptr;
      size_t count = la.isTemporary ? f.temporaries.size() : f.args.size();
      int64_t k;
      if (!readInt(*(arg ? arg : temp), join(p, arg ? "arg" : "temp"), 0,
                   std::numeric_limits<int32_t>::max(), k))
        return false;
      if (size_t(k) >= count)
        return fail(
            join(p, arg ? "arg" : "temp"),
            std::string(arg ? "arg" : "temp") + " index " + std::to_string(k) +
                " is out of range (the function "
                "has " +
                std::to_string(count) + (arg ? " args)" : " temporaries)"));
      la.index = unsigned(k);
      l.args.push_back(la);
    }
    return true;
  }

  bool readFunction(const Json &v, const std::string &path, FunctionSpec &f) {
    if (v.kind != Json::Kind::Object)
      return fail(path,
                  std::string("expected an object, got ") + kindName(v.kind));
    if (!readName(v, path, "name", f.name))
      return false;
    const Json *args = member(v, path, "args", Json::Kind::Array);
    const Json *temps =
        args ? member(v, path, "temporaries", Json::Kind::Array) : nullptr;
    const Json *launches =
        temps ? member(v, path, "launches", Json::Kind::Array) : nullptr;
    if (!launches)
      return false;
    for (size_t i = 0; i < args->array.size(); ++i) {
      BufferSpec b;
      if (!readBuffer(args->array[i], index(join(path, "args"), i), false, b))
        return false;
      f.args.push_back(std::move(b));
    }
    for (size_t i = 0; i < temps->array.size(); ++i) {
      BufferSpec b;
      if (!readBuffer(temps->array[i], index(join(path, "temporaries"), i),
                      true, b))
        return false;
      f.temporaries.push_back(std::move(b));
    }
    for (size_t i = 0; i < launches->array.size(); ++i) {
      LaunchSpec l;
      if (!readLaunch(launches->array[i], index(join(path, "launches"), i), f,
                      l))
        return false;
      f.launches.push_back(std::move(l));
    }
    return true;
  }

  bool readManifest(const Json &root, Manifest &m) {
    if (root.kind != Json::Kind::Object)
      return fail("", std::string("expected an object at the top, got ") +
                          kindName(root.kind));
    const Json *version = root.get("version");
    if (!version)
      return fail("", "missing field \"version\"");
    int64_t ver;
    if (!readInt(*version, "version", 0, std::numeric_limits<int32_t>::max(),
                 ver))
      return false;
    if (ver != 1)
      return fail("version", "unsupported manifest version " +
                                 std::to_string(ver) +
                                 " (this runtime reads version 1)");
    m.version = int(ver);
    const Json *format = member(root, "", "format", Json::Kind::String);
    if (!format)
      return false;
    if (format->string != "ptx" && format->string != "cubin")
      return fail("format", "unknown format \"" + format->string +
                                "\" (expected \"ptx\" or \"cubin\")");
    m.format = format->string;
    if (!readName(root, "", "image", m.image))
      return false;
    const Json *chip = member(root, "", "chip", Json::Kind::String);
    if (!chip)
      return false;
    m.chip = chip->string;
    const Json *functions = member(root, "", "functions", Json::Kind::Array);
    if (!functions)
      return false;
    for (size_t i = 0; i < functions->array.size(); ++i) {
      FunctionSpec f;
      std::string path = index("functions", i);
      if (!readFunction(functions->array[i], path, f))
        return false;
      if (m.find(f.name))
        return fail(join(path, "name"),
                    "duplicate function name \"" + f.name + "\"");
      m.functions.push_back(std::move(f));
    }
    return true;
  }

  std::string where;
  std::string error;
};

} // namespace

const char *tang::cuda::dtypeName(DType type) {
  switch (type) {
  case DType::F64:
    return "f64";
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::I1:
    return "i1";
  }
  return "?";
}

size_t tang::cuda::dtypeBytes(DType type) {
  switch (type) {
  case DType::F64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 0;
}

std::optional<DType> tang::cuda::parseDType(const std::string &name) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I32,
                  DType::I8, DType::I1})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

int64_t BufferSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t FunctionSpec::numInputs() const {
  size_t n = 0;
  for (const BufferSpec &b : args)
    n += b.role == BufferSpec::Role::Input;
  return n;
}

Expected<Manifest> Manifest::parse(const std::string &json,
                                   const std::string &where) {
  Expected<Json> root = JsonParser(json).parseDocument();
  if (!root)
    return root.takeError().withContext(where);
  return ManifestReader(where).read(*root);
}

Expected<Manifest> Manifest::loadFile(const std::string &path) {
  Expected<std::string> text = readFile(path);
  if (!text)
    return text.takeError();
  return parse(*text, path);
}

const FunctionSpec *Manifest::find(const std::string &name) const {
  for (const FunctionSpec &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

std::string Manifest::functionNames() const {
  std::string s;
  for (const FunctionSpec &f : functions)
    s += (s.empty() ? "" : ", ") + f.name;
  return s.empty() ? "(none)" : s;
}

//===----------------------------------------------------------------------===//
// Bundle
//===----------------------------------------------------------------------===//

Expected<Bundle> Bundle::load(const Context &context, const std::string &dir) {
  Expected<Manifest> m = Manifest::loadFile(dir + "/manifest.json");
  if (!m)
    return m.takeError();
  return load(context, dir, std::move(*m));
}

Expected<Bundle> Bundle::load(const Context &context, const std::string &dir,
                              Manifest manifest) {
  if (Error e = context.makeCurrent())
    return e;
  Bundle b;
  b.man = std::move(manifest);
  Expected<Module> mod = Module::loadFile(dir + "/" + b.man.image);
  if (!mod)
    return mod.takeError();
  b.mod = std::move(*mod);
  // The kernels a function needs, each looked up once.
  std::map<std::string, CUfunction> kernels;
  std::map<CUfunction, unsigned> sharedSet;
  for (const FunctionSpec &f : b.man.functions) {
    Loaded l;
    for (const LaunchSpec &launchSpec : f.launches) {
      auto it = kernels.find(launchSpec.kernel);
      if (it == kernels.end()) {
        Expected<CUfunction> k = b.mod.function(launchSpec.kernel);
        if (!k)
          return k.takeError().withContext("function '" + f.name + "'");
        it = kernels.emplace(launchSpec.kernel, *k).first;
      }
      // Over 48 KiB of dynamic shared memory must be allowed explicitly.
      constexpr unsigned kDefaultSharedLimit = 48 * 1024;
      unsigned &limit = sharedSet[it->second];
      if (launchSpec.sharedBytes > kDefaultSharedLimit &&
          launchSpec.sharedBytes > limit) {
        if (Error e =
                setMaxDynamicSharedBytes(it->second, launchSpec.sharedBytes))
          return std::move(e).withContext("kernel '" + launchSpec.kernel + "'");
        limit = launchSpec.sharedBytes;
      }
      l.kernels.push_back(it->second);
    }
    b.loaded.push_back(std::move(l));
  }
  return b;
}

Error Bundle::run(const std::string &name, const std::vector<CUdeviceptr> &args,
                  CUstream stream) {
  const FunctionSpec *f = man.find(name);
  if (!f)
    return Error::failure("no function '" + name + "' in the bundle (it has " +
                          man.functionNames() + ")");
  if (args.size() != f->args.size())
    return Error::failure("function '" + name + "' takes " +
                          std::to_string(f->args.size()) + " buffers, got " +
                          std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i] && f->args[i].numBytes())
      return Error::failure("function '" + name + "': buffer #" +
                            std::to_string(i) + " is null");
  Loaded &l = loaded[f - man.functions.data()];
  if (!l.allocated) {
    for (const BufferSpec &t : f->temporaries) {
      Expected<Buffer> buf = Buffer::allocate(t.numBytes());
      if (!buf)
        return buf.takeError().withContext("function '" + name +
                                           "': temporary");
      l.temporaries.push_back(std::move(*buf));
    }
    l.allocated = true;
  }
  std::vector<CUdeviceptr> values;
  std::vector<void *> params;
  for (size_t i = 0; i < f->launches.size(); ++i) {
    const LaunchSpec &launchSpec = f->launches[i];
    values.clear();
    for (const LaunchArg &a : launchSpec.args)
      values.push_back(a.isTemporary ? l.temporaries[a.index].ptr()
                                     : args[a.index]);
    params.clear();
    for (CUdeviceptr &v : values)
      params.push_back(&v);
    if (Error e = launch(l.kernels[i], launchSpec.grid, launchSpec.block,
                         launchSpec.sharedBytes, params.data(), stream))
      return std::move(e).withContext("function '" + name + "', launch #" +
                                      std::to_string(i) + " (" +
                                      launchSpec.kernel + ")");
  }
  return Error::success();
}
