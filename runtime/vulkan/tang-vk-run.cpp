//===- tang-vk-run.cpp - Run a function of a tang SPIR-V bundle -*- C++ -*-===//
//
// tang-vk-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR]
// tang-vk-run --probe
//
// Loads a bundle written by `tang-opt --tang-lower-spirv="bundle=DIR"`
// (manifest.json plus a Vulkan compute SPIR-V module, see
// docs/CudaBundle.md), reads one .npy file per input argument, runs the
// function's launches once on the first Vulkan device with a compute queue
// and writes output #k (in argument order) to DIR/output_<k>.npy: float
// outputs as float64, i32 outputs as int32, as tang-run writes them.
//
// The Vulkan loader (libvulkan.so.1) is opened at run time, so that a machine
// without it gets one clear message instead of a dynamic-linker error.
//
// Exit codes: 0 success; 1 bad usage, bundle, input or a failing Vulkan call;
// 2 no Vulkan loader, no driver or no device with a compute queue.
//
// On lavapipe (Mesa's CPU driver) the loops of one shader invocation stop,
// silently, once they have run 65535 iterations in all (gallivm's loop
// limiter): kernels that loop longer give wrong results there.
//
//===----------------------------------------------------------------------===//

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Exit code of a missing Vulkan loader, driver or device.
constexpr int kNoDeviceExit = 2;

/// Why a step failed: the message and the process exit code it maps to.
struct Failure {
  int exitCode = 1;
  std::string message;
};

/// The outcome of a step: success, or a Failure.
class Status {
public:
  Status() = default;
  Status(Failure f) : failed(true), failure(std::move(f)) {}

  static Status error(std::string message, int exitCode = 1) {
    return Status(Failure{exitCode, std::move(message)});
  }

  explicit operator bool() const { return !failed; }
  const Failure &getFailure() const { return failure; }

private:
  bool failed = false;
  Failure failure;
};

/// Returns from the enclosing function when `expr` (a Status) failed.
#define TRY(expr)                                                              \
  do {                                                                         \
    Status status_ = (expr);                                                   \
    if (!status_)                                                              \
      return status_;                                                          \
  } while (false)

//===----------------------------------------------------------------------===//
// Manifest JSON
//===----------------------------------------------------------------------===//

/// A JSON value. Numbers keep whether they were written as integers.
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  bool integer = false;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  /// The member `key` of an object, or null when absent.
  const Json *get(const std::string &key) const {
    for (const auto &[k, v] : object)
      if (k == key)
        return &v;
    return nullptr;
  }
};

/// The JSON name of `kind`, for error messages.
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

/// A recursive-descent parser of one JSON document (RFC 8259).
class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text(text) {}

  Status parse(Json &out) {
    skipSpace();
    TRY(parseValue(out, 0));
    skipSpace();
    if (pos != text.size())
      return error("unexpected text after the JSON value");
    return {};
  }

private:
  const std::string &text;
  size_t pos = 0;

  Status error(const std::string &what) const {
    size_t line = 1 + std::count(text.begin(), text.begin() + pos, '\n');
    return Status::error("invalid JSON at line " + std::to_string(line) + ": " +
                         what);
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\r' || text[pos] == '\n'))
      ++pos;
  }

  bool consume(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  Status parseValue(Json &v, int depth) {
    if (depth > 64)
      return error("nested too deeply");
    if (pos >= text.size())
      return error("unexpected end of input");
    char c = text[pos];
    if (c == '{')
      return parseObject(v, depth);
    if (c == '[')
      return parseArray(v, depth);
    if (c == '"') {
      v.kind = Json::Kind::String;
      return parseString(v.string);
    }
    if (consume("true")) {
      v.kind = Json::Kind::Bool;
      v.boolean = true;
      return {};
    }
    if (consume("false")) {
      v.kind = Json::Kind::Bool;
      return {};
    }
    if (consume("null")) {
      v.kind = Json::Kind::Null;
      return {};
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(v);
    return error(std::string("unexpected character '") + c + "'");
  }

  Status parseObject(Json &v, int depth) {
    v.kind = Json::Kind::Object;
    ++pos;
    skipSpace();
    if (consume("}"))
      return {};
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return error("expected a member name");
      std::string key;
      TRY(parseString(key));
      skipSpace();
      if (!consume(":"))
        return error("expected ':' after a member name");
      skipSpace();
      Json member;
      TRY(parseValue(member, depth + 1));
      v.object.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (consume("}"))
        return {};
      if (!consume(","))
        return error("expected ',' or '}' in an object");
    }
  }

  Status parseArray(Json &v, int depth) {
    v.kind = Json::Kind::Array;
    ++pos;
    skipSpace();
    if (consume("]"))
      return {};
    while (true) {
      skipSpace();
      Json element;
      TRY(parseValue(element, depth + 1));
      v.array.push_back(std::move(element));
      skipSpace();
      if (consume("]"))
        return {};
      if (!consume(","))
        return error("expected ',' or ']' in an array");
    }
  }

  /// Appends the UTF-8 encoding of `cp` to `out`.
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

  Status parseHex4(uint32_t &cp) {
    if (pos + 4 > text.size())
      return error("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text[pos++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= h - '0';
      else if (h >= 'a' && h <= 'f')
        cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        cp |= h - 'A' + 10;
      else
        return error("bad \\u escape");
    }
    return {};
  }

  Status parseString(std::string &out) {
    ++pos; // The opening quote.
    while (true) {
      if (pos >= text.size())
        return error("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return {};
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return error("unterminated string");
      char e = text[pos++];
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
        uint32_t cp = 0;
        TRY(parseHex4(cp));
        if (cp >= 0xd800 && cp < 0xdc00 && consume("\\u")) {
          uint32_t low = 0;
          TRY(parseHex4(low));
          if (low < 0xdc00 || low >= 0xe000)
            return error("bad surrogate pair");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return error(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  Status parseNumber(Json &v) {
    size_t start = pos;
    bool integer = true;
    if (text[pos] == '-')
      ++pos;
    auto digits = [&] {
      size_t from = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > from;
    };
    if (!digits())
      return error("bad number");
    if (pos < text.size() && text[pos] == '.') {
      integer = false;
      ++pos;
      if (!digits())
        return error("bad number");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      integer = false;
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return error("bad number");
    }
    v.kind = Json::Kind::Number;
    v.integer = integer;
    v.number = std::strtod(text.substr(start, pos - start).c_str(), nullptr);
    return {};
  }
};

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

/// An element type of the manifest.
enum class DType { F64, F32, F16, BF16, I32, I8, I1 };

/// Parses a manifest dtype name.
bool parseDType(const std::string &name, DType &t) {
  static const std::pair<const char *, DType> kNames[] = {
      {"f64", DType::F64},   {"f32", DType::F32}, {"f16", DType::F16},
      {"bf16", DType::BF16}, {"i32", DType::I32}, {"i8", DType::I8},
      {"i1", DType::I1}};
  for (const auto &[n, v] : kNames)
    if (name == n) {
      t = v;
      return true;
    }
  return false;
}

const char *dtypeName(DType t) {
  switch (t) {
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

size_t dtypeBytes(DType t) {
  switch (t) {
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
  return 1;
}

/// Whether tang-vk-run can read and write buffers of `t`.
bool isSupportedIO(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32;
}

/// A buffer: a function argument or a temporary.
struct BufferSpec {
  enum class Role { Input, Output, Temporary };
  Role role = Role::Temporary;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return size_t(elements()) * dtypeBytes(dtype); }
};

/// One kernel launch.
struct Launch {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  int64_t sharedBytes = 0;
  /// Per kernel parameter: its buffer, an index into the function's
  /// arguments followed by its temporaries.
  std::vector<size_t> buffers;
};

/// One host function of the bundle.
struct Function {
  std::string name;
  std::vector<BufferSpec> args;
  std::vector<BufferSpec> temporaries;
  std::vector<Launch> launches;
};

/// The bundle's manifest.json.
struct Manifest {
  std::string image;
  std::vector<Function> functions;
};

/// Reads a parsed manifest, naming the JSON path of the first problem.
class ManifestReader {
public:
  Status read(const Json &root, Manifest &m) {
    if (root.kind != Json::Kind::Object)
      return fail("manifest", "expected an object");
    const Json *version = member(root, "manifest", "version");
    if (!version)
      return last;
    if (version->kind != Json::Kind::Number || !version->integer ||
        version->number != 1)
      return fail("manifest.version", "unsupported version (expected 1)");
    std::string format;
    TRY(readString(root, "manifest", "format", format));
    if (format != "spirv")
      return fail("manifest.format",
                  "\"" + format +
                      "\" is not a Vulkan bundle (expected \"spirv\"; "
                      "tang-cuda-run runs \"ptx\" and \"cubin\" bundles)");
    TRY(readString(root, "manifest", "image", m.image));
    if (m.image.empty())
      return fail("manifest.image", "empty file name");
    const Json *functions = member(root, "manifest", "functions");
    if (!functions)
      return last;
    TRY(expectKind(*functions, "manifest.functions", Json::Kind::Array));
    for (size_t i = 0; i < functions->array.size(); ++i) {
      Function f;
      TRY(readFunction(functions->array[i],
                       "manifest.functions[" + std::to_string(i) + "]", f));
      m.functions.push_back(std::move(f));
    }
    return {};
  }

private:
  Status last;

  static Status fail(const std::string &path, const std::string &what) {
    return Status::error("bad manifest: " + path + ": " + what);
  }

  Status expectKind(const Json &v, const std::string &path, Json::Kind kind) {
    if (v.kind != kind)
      return fail(path, std::string("expected ") + kindName(kind) + ", got " +
                            kindName(v.kind));
    return {};
  }

  const Json *member(const Json &v, const std::string &path, const char *key) {
    const Json *m = v.get(key);
    if (!m)
      last = fail(path, std::string("missing \"") + key + "\"");
    return m;
  }

  Status readString(const Json &v, const std::string &path, const char *key,
                    std::string &out) {
    const Json *m = member(v, path, key);
    if (!m)
      return last;
    TRY(expectKind(*m, path + "." + key, Json::Kind::String));
    out = m->string;
    return {};
  }

  Status readInt(const Json &v, const std::string &path, int64_t lo, int64_t hi,
                 int64_t &out) {
    if (v.kind != Json::Kind::Number || !v.integer)
      return fail(path, std::string("expected an integer, got ") +
                            (v.kind == Json::Kind::Number ? "a non-integer"
                                                          : kindName(v.kind)));
    if (v.number < double(lo) || v.number > double(hi))
      return fail(path, "out of range [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
    out = int64_t(v.number);
    return {};
  }

  Status readDim3(const Json &v, const std::string &path, const char *key,
                  uint32_t out[3]) {
    const Json *m = member(v, path, key);
    if (!m)
      return last;
    std::string p = path + "." + key;
    TRY(expectKind(*m, p, Json::Kind::Array));
    if (m->array.size() != 3)
      return fail(p, "expected 3 integers");
    for (size_t i = 0; i < 3; ++i) {
      int64_t x;
      TRY(readInt(m->array[i], p + "[" + std::to_string(i) + "]", 1, UINT32_MAX,
                  x));
      out[i] = uint32_t(x);
    }
    return {};
  }

  Status readBuffer(const Json &v, const std::string &path, bool isArg,
                    BufferSpec &b) {
    TRY(expectKind(v, path, Json::Kind::Object));
    if (isArg) {
      std::string role;
      TRY(readString(v, path, "role", role));
      if (role == "input")
        b.role = BufferSpec::Role::Input;
      else if (role == "output")
        b.role = BufferSpec::Role::Output;
      else
        return fail(path + ".role", "unknown role \"" + role +
                                        "\" (expected \"input\" or "
                                        "\"output\")");
    }
    std::string dtype;
    TRY(readString(v, path, "dtype", dtype));
    if (!parseDType(dtype, b.dtype))
      return fail(path + ".dtype", "unknown dtype \"" + dtype + "\"");
    const Json *shape = member(v, path, "shape");
    if (!shape)
      return last;
    TRY(expectKind(*shape, path + ".shape", Json::Kind::Array));
    int64_t elements = 1;
    for (size_t i = 0; i < shape->array.size(); ++i) {
      int64_t d;
      TRY(readInt(shape->array[i], path + ".shape[" + std::to_string(i) + "]",
                  0, int64_t(1) << 40, d));
      b.shape.push_back(d);
      if (d != 0 && elements > (int64_t(1) << 40) / d)
        return fail(path + ".shape", "too many elements");
      elements *= d;
    }
    return {};
  }

  Status readFunction(const Json &v, const std::string &path, Function &f) {
    TRY(expectKind(v, path, Json::Kind::Object));
    TRY(readString(v, path, "name", f.name));
    const Json *args = member(v, path, "args");
    if (!args)
      return last;
    TRY(expectKind(*args, path + ".args", Json::Kind::Array));
    for (size_t i = 0; i < args->array.size(); ++i) {
      BufferSpec b;
      TRY(readBuffer(args->array[i], path + ".args[" + std::to_string(i) + "]",
                     /*isArg=*/true, b));
      f.args.push_back(std::move(b));
    }
    if (const Json *temps = v.get("temporaries")) {
      TRY(expectKind(*temps, path + ".temporaries", Json::Kind::Array));
      for (size_t i = 0; i < temps->array.size(); ++i) {
        BufferSpec b;
        TRY(readBuffer(temps->array[i],
                       path + ".temporaries[" + std::to_string(i) + "]",
                       /*isArg=*/false, b));
        f.temporaries.push_back(std::move(b));
      }
    }
    const Json *launches = member(v, path, "launches");
    if (!launches)
      return last;
    TRY(expectKind(*launches, path + ".launches", Json::Kind::Array));
    for (size_t i = 0; i < launches->array.size(); ++i) {
      Launch l;
      TRY(readLaunch(launches->array[i],
                     path + ".launches[" + std::to_string(i) + "]", f, l));
      f.launches.push_back(std::move(l));
    }
    return {};
  }

  Status readLaunch(const Json &v, const std::string &path, const Function &f,
                    Launch &l) {
    TRY(expectKind(v, path, Json::Kind::Object));
    TRY(readString(v, path, "kernel", l.kernel));
    TRY(readDim3(v, path, "grid", l.grid));
    TRY(readDim3(v, path, "block", l.block));
    if (const Json *shared = v.get("shared_bytes"))
      TRY(readInt(*shared, path + ".shared_bytes", 0, INT32_MAX,
                  l.sharedBytes));
    const Json *args = member(v, path, "args");
    if (!args)
      return last;
    TRY(expectKind(*args, path + ".args", Json::Kind::Array));
    for (size_t i = 0; i < args->array.size(); ++i) {
      const Json &a = args->array[i];
      std::string p = path + ".args[" + std::to_string(i) + "]";
      TRY(expectKind(a, p, Json::Kind::Object));
      const Json *arg = a.get("arg");
      const Json *temp = a.get("temp");
      if ((arg != nullptr) == (temp != nullptr))
        return fail(p, "expected exactly one of \"arg\" and \"temp\"");
      int64_t index;
      if (arg) {
        TRY(readInt(*arg, p + ".arg", 0, int64_t(f.args.size()) - 1, index));
        l.buffers.push_back(size_t(index));
      } else {
        TRY(readInt(*temp, p + ".temp", 0, int64_t(f.temporaries.size()) - 1,
                    index));
        l.buffers.push_back(f.args.size() + size_t(index));
      }
    }
    return {};
  }
};

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

Status readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return {};
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A .npy array: its dtype as written ("<f4", "|b1", ...), its shape and its
/// raw little-endian bytes.
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
};

/// The text after `'key':` in a .npy header dict, or npos.
size_t findKey(const std::string &header, const char *key) {
  std::string quoted = std::string("'") + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos)
    return at;
  at = header.find(':', at + quoted.size());
  if (at == std::string::npos)
    return at;
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  return at;
}

/// Reads the .npy file at `path` (format versions 1 to 3, C order).
Status readNpy(const std::string &path, Npy &npy) {
  std::string bytes;
  TRY(readFile(path, bytes));
  auto bad = [&](const std::string &what) {
    return Status::error(path + ": " + what);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad("not a .npy file (bad magic string)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (size_t(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated .npy header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  } else {
    return bad("unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < offset + headerLen)
    return bad("truncated .npy header");
  std::string header = bytes.substr(offset, headerLen);

  size_t d = findKey(header, "descr");
  if (d == std::string::npos || d >= header.size() || header[d] != '\'')
    return bad("malformed .npy header: no 'descr'");
  size_t end = header.find('\'', d + 1);
  if (end == std::string::npos)
    return bad("malformed .npy header: bad 'descr'");
  npy.descr = header.substr(d + 1, end - d - 1);

  size_t f = findKey(header, "fortran_order");
  if (f == std::string::npos)
    return bad("malformed .npy header: no 'fortran_order'");
  if (header.compare(f, 4, "True") == 0)
    return bad("Fortran-order arrays are not supported (save a C-order "
               "array, e.g. np.ascontiguousarray)");

  size_t s = findKey(header, "shape");
  if (s == std::string::npos || s >= header.size() || header[s] != '(')
    return bad("malformed .npy header: no 'shape'");
  size_t close = header.find(')', s);
  if (close == std::string::npos)
    return bad("malformed .npy header: bad 'shape'");
  std::stringstream dims(header.substr(s + 1, close - s - 1));
  std::string part;
  int64_t elements = 1;
  while (std::getline(dims, part, ',')) {
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (part.empty())
      continue;
    char *endp = nullptr;
    long long n = std::strtoll(part.c_str(), &endp, 10);
    if (*endp != '\0' || n < 0 || n > (int64_t(1) << 40))
      return bad("malformed .npy header: bad dimension '" + part + "'");
    npy.shape.push_back(n);
    elements *= n;
  }
  size_t itemSize = 0;
  if (npy.descr.size() >= 3)
    itemSize = std::strtoul(npy.descr.c_str() + 2, nullptr, 10);
  if (itemSize == 0)
    return bad("unsupported .npy dtype '" + npy.descr + "'");
  size_t need = size_t(elements) * itemSize;
  if (bytes.size() - offset - headerLen < need)
    return bad("the shape " + shapeString(npy.shape) + " needs " +
               std::to_string(need) + " bytes of data, the file has " +
               std::to_string(bytes.size() - offset - headerLen));
  npy.data = bytes.substr(offset + headerLen, need);
  return {};
}

/// Converts `npy` into `out` (b.bytes() bytes), the contents of a buffer of
/// `b`'s dtype. Float buffers take <f4 and <f8 arrays; i32 buffers take <i4
/// and <i8 (in range).
Status convertInput(const Npy &npy, const BufferSpec &b,
                    const std::string &what, void *out) {
  size_t n = size_t(b.elements());
  auto cannot = [&] {
    return Status::error(
        what + ": a .npy array of dtype '" + npy.descr + "' cannot feed a " +
        dtypeName(b.dtype) + " buffer (use " +
        (b.dtype == DType::I32 ? "<i4 or <i8" : "<f4 or <f8") + ")");
  };
  const char *src = npy.data.data();
  if (b.dtype == DType::F32 || b.dtype == DType::F64) {
    bool f4 = npy.descr == "<f4", f8 = npy.descr == "<f8";
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
    return {};
  }
  if (b.dtype == DType::I32) {
    bool i4 = npy.descr == "<i4", i8 = npy.descr == "<i8";
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
          return Status::error(what + ": element " + std::to_string(i) + " (" +
                               std::to_string(x) + ") does not fit in i32");
      }
      int32_t v = int32_t(x);
      std::memcpy(static_cast<char *>(out) + 4 * i, &v, 4);
    }
    return {};
  }
  return cannot();
}

/// Writes buffer contents `data` of `b` to the .npy file at `path`: floats as
/// float64 (<f8), i32 as int32 (<i4).
Status writeNpy(const std::string &path, const BufferSpec &b,
                const void *data) {
  size_t n = size_t(b.elements());
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
      } else {
        std::memcpy(&x, static_cast<const char *>(data) + 8 * i, 8);
      }
      std::memcpy(&payload[8 * i], &x, 8);
    }
  }
  // Python tuple syntax: "()", "(8,)", "(8, 32)".
  std::string shape = "(";
  for (size_t i = 0; i < b.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(b.shape[i]);
  shape += b.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts at a multiple of 64, then '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return Status::error("cannot write " + path + ": " + std::strerror(errno));
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(payload.data(), std::streamsize(payload.size()));
  if (!out)
    return Status::error("cannot write " + path);
  return {};
}

//===----------------------------------------------------------------------===//
// SPIR-V module inspection
//===----------------------------------------------------------------------===//

/// What tang-vk-run checks in the SPIR-V module before creating pipelines:
/// the entry points with their LocalSize, and the declared capabilities.
struct SpirvInfo {
  /// GLCompute entry point name -> LocalSize (0s when not declared).
  std::map<std::string, std::vector<uint32_t>> entryPoints;
  std::set<uint32_t> capabilities;
};

/// SPIR-V opcodes, capabilities and execution modes used here.
enum : uint32_t {
  kSpirvMagic = 0x07230203,
  kOpCapability = 17,
  kOpEntryPoint = 15,
  kOpExecutionMode = 16,
  kExecutionModelGLCompute = 5,
  kExecutionModeLocalSize = 17,
  kCapFloat16 = 9,
  kCapFloat64 = 10,
  kCapInt64 = 11,
  kCapInt16 = 22,
  kCapInt8 = 39,
  kCapStorageBuffer16BitAccess = 4433,
  kCapStorageBuffer8BitAccess = 4448,
};

Status inspectSpirv(const std::vector<uint32_t> &words, const std::string &path,
                    SpirvInfo &info) {
  if (words.size() < 5 || words[0] != kSpirvMagic)
    return Status::error(path + ": not a SPIR-V module (bad magic number)");
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, std::vector<uint32_t>> localSizes;
  for (size_t at = 5; at < words.size();) {
    uint32_t count = words[at] >> 16, opcode = words[at] & 0xffff;
    if (count == 0 || at + count > words.size())
      return Status::error(path + ": malformed SPIR-V instruction at word " +
                           std::to_string(at));
    const uint32_t *op = &words[at];
    if (opcode == kOpCapability && count >= 2) {
      info.capabilities.insert(op[1]);
    } else if (opcode == kOpEntryPoint && count >= 4 &&
               op[1] == kExecutionModelGLCompute) {
      const char *chars = reinterpret_cast<const char *>(op + 3);
      names[op[2]] = std::string(chars, strnlen(chars, 4 * (count - 3)));
    } else if (opcode == kOpExecutionMode && count >= 6 &&
               op[2] == kExecutionModeLocalSize) {
      localSizes[op[1]] = {op[3], op[4], op[5]};
    }
    at += count;
  }
  for (const auto &[id, name] : names) {
    auto it = localSizes.find(id);
    info.entryPoints[name] =
        it == localSizes.end() ? std::vector<uint32_t>{0, 0, 0} : it->second;
  }
  return {};
}

/// Checks that every launch of `f` names a GLCompute entry point of the
/// module whose LocalSize is the launch's block.
Status checkEntryPoints(const Function &f, const SpirvInfo &info) {
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const Launch &l = f.launches[i];
    std::string what = "launch #" + std::to_string(i) + " (" + l.kernel + ")";
    auto ep = info.entryPoints.find(l.kernel);
    if (ep == info.entryPoints.end())
      return Status::error(what +
                           ": the SPIR-V module has no GLCompute entry point "
                           "named \"" +
                           l.kernel + "\"");
    const std::vector<uint32_t> &local = ep->second;
    if (local[0] && (local[0] != l.block[0] || local[1] != l.block[1] ||
                     local[2] != l.block[2]))
      return Status::error(
          what + ": the manifest's block [" + std::to_string(l.block[0]) +
          ", " + std::to_string(l.block[1]) + ", " +
          std::to_string(l.block[2]) + "] differs from the entry point's " +
          "LocalSize " + std::to_string(local[0]) + " " +
          std::to_string(local[1]) + " " + std::to_string(local[2]));
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Vulkan
//===----------------------------------------------------------------------===//

/// The name of a VkResult code.
const char *resultName(VkResult r) {
  switch (r) {
#define CASE(x)                                                                \
  case x:                                                                      \
    return #x;
    CASE(VK_SUCCESS)
    CASE(VK_NOT_READY)
    CASE(VK_TIMEOUT)
    CASE(VK_INCOMPLETE)
    CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CASE(VK_ERROR_INITIALIZATION_FAILED)
    CASE(VK_ERROR_DEVICE_LOST)
    CASE(VK_ERROR_MEMORY_MAP_FAILED)
    CASE(VK_ERROR_LAYER_NOT_PRESENT)
    CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    CASE(VK_ERROR_TOO_MANY_OBJECTS)
    CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    CASE(VK_ERROR_FRAGMENTED_POOL)
    CASE(VK_ERROR_UNKNOWN)
    CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    CASE(VK_ERROR_FRAGMENTATION)
    CASE(VK_ERROR_INVALID_SHADER_NV)
#undef CASE
  default:
    return "unknown VkResult";
  }
}

/// Every Vulkan entry point used, by level. X(name).
#define TANG_VK_GLOBAL_FNS(X)                                                  \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceLayerProperties)
#define TANG_VK_INSTANCE_FNS(X)                                                \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceFeatures)                                               \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)
#define TANG_VK_DEVICE_FNS(X)                                                  \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkUnmapMemory)                                                             \
  X(vkFlushMappedMemoryRanges)                                                 \
  X(vkInvalidateMappedMemoryRanges)                                            \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdDispatch)                                                             \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkQueueSubmit)                                                             \
  X(vkWaitForFences)

/// The Vulkan entry points, loaded from libvulkan.so.1 at run time.
struct VulkanApi {
  void *library = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define DECLARE(name) PFN_##name name = nullptr;
  TANG_VK_GLOBAL_FNS(DECLARE)
  TANG_VK_INSTANCE_FNS(DECLARE)
  TANG_VK_DEVICE_FNS(DECLARE)
#undef DECLARE

  ~VulkanApi() {
    if (library)
      dlclose(library);
  }
};

/// Checks a VkResult, naming the call that returned it.
Status check(VkResult r, const char *call) {
  if (r == VK_SUCCESS)
    return {};
  return Status::error(std::string(call) + " failed: " + resultName(r) + " (" +
                       std::to_string(int(r)) + ")");
}

/// Calls `vk.fn(args...)` and returns from the enclosing function when it
/// fails, naming `fn`.
#define VK_CALL(fn, ...) TRY(check(vk.fn(__VA_ARGS__), #fn))

/// A device buffer with its host-visible memory, mapped for the whole run.
struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void *mapped = nullptr;
};

/// Runs one function of a bundle. Owns every Vulkan object it creates and
/// destroys them in reverse order.
class Runner {
public:
  ~Runner() { destroy(); }

  /// Opens the loader, creates the instance and the device (the first one
  /// with a compute queue). Failures here exit with kNoDeviceExit when they
  /// mean "no Vulkan here".
  Status init(bool validate, bool verbose);

  /// Creates the buffers and pipelines of `f` and runs it with `inputs`
  /// (the contents of each input argument's buffer, converted), then writes
  /// the outputs under `outDir` (when not empty).
  Status run(const Function &f, const std::vector<uint32_t> &spirv,
             const SpirvInfo &info, const std::vector<std::string> &inputs,
             const std::string &outDir);

  const std::string &deviceName() const { return devName; }

private:
  VulkanApi vk;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  std::string devName;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memProps{};

  std::vector<DeviceBuffer> buffers;
  VkShaderModule module = VK_NULL_HANDLE;
  std::vector<VkDescriptorSetLayout> setLayouts;
  std::vector<VkPipelineLayout> pipelineLayouts;
  std::vector<VkPipeline> pipelines;
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

  Status loadLoader();
  Status createDevice(const SpirvInfo &info);
  Status createBuffer(size_t bytes, DeviceBuffer &b);
  Status checkLimits(const Function &f);
  void destroy();
};

Status Runner::loadLoader() {
  const char *names[] = {"libvulkan.so.1", "libvulkan.so"};
  for (const char *name : names)
    if ((vk.library = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!vk.library)
    return Status::error("no Vulkan loader: cannot open libvulkan.so.1 (" +
                             std::string(dlerror()) +
                             "); install libvulkan1 and a driver, e.g. "
                             "mesa-vulkan-drivers (lavapipe)",
                         kNoDeviceExit);
  vk.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(vk.library, "vkGetInstanceProcAddr"));
  if (!vk.vkGetInstanceProcAddr)
    return Status::error("no Vulkan loader: libvulkan.so.1 has no "
                         "vkGetInstanceProcAddr",
                         kNoDeviceExit);
#define LOAD(name)                                                             \
  vk.name = reinterpret_cast<PFN_##name>(                                      \
      vk.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));                        \
  if (!vk.name)                                                                \
    return Status::error("the Vulkan loader lacks " #name, kNoDeviceExit);
  TANG_VK_GLOBAL_FNS(LOAD)
#undef LOAD
  return {};
}

Status Runner::init(bool validate, bool verbose) {
  TRY(loadLoader());

  const char *kValidation = "VK_LAYER_KHRONOS_validation";
  std::vector<const char *> layers;
  if (validate) {
    uint32_t n = 0;
    VK_CALL(vkEnumerateInstanceLayerProperties, &n, nullptr);
    std::vector<VkLayerProperties> available(n);
    VK_CALL(vkEnumerateInstanceLayerProperties, &n, available.data());
    bool found = false;
    for (const VkLayerProperties &l : available)
      found |= std::strcmp(l.layerName, kValidation) == 0;
    if (found)
      layers.push_back(kValidation);
    else
      std::fprintf(stderr,
                   "tang-vk-run: TANG_VK_VALIDATE=1 but %s is not installed "
                   "(apt-get install vulkan-validationlayers); running "
                   "without it\n",
                   kValidation);
  }

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tang-vk-run";
  app.pEngineName = "tang";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{};
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = uint32_t(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  VkResult r = vk.vkCreateInstance(&ici, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Status::error("no Vulkan driver: vkCreateInstance failed with "
                         "VK_ERROR_INCOMPATIBLE_DRIVER (install a driver, "
                         "e.g. mesa-vulkan-drivers for lavapipe)",
                         kNoDeviceExit);
  TRY(check(r, "vkCreateInstance"));

#define LOAD(name)                                                             \
  vk.name =                                                                    \
      reinterpret_cast<PFN_##name>(vk.vkGetInstanceProcAddr(instance, #name)); \
  if (!vk.name)                                                                \
    return Status::error("the Vulkan instance lacks " #name);
  TANG_VK_INSTANCE_FNS(LOAD)
#undef LOAD

  uint32_t count = 0;
  r = vk.vkEnumeratePhysicalDevices(instance, &count, nullptr);
  if (r == VK_ERROR_INITIALIZATION_FAILED || (r == VK_SUCCESS && count == 0))
    return Status::error("no Vulkan device: the loader found no physical "
                         "device (install a driver, e.g. mesa-vulkan-drivers "
                         "for lavapipe)",
                         kNoDeviceExit);
  TRY(check(r, "vkEnumeratePhysicalDevices"));
  std::vector<VkPhysicalDevice> devices(count);
  r = vk.vkEnumeratePhysicalDevices(instance, &count, devices.data());
  if (r != VK_INCOMPLETE)
    TRY(check(r, "vkEnumeratePhysicalDevices"));

  for (VkPhysicalDevice d : devices) {
    uint32_t nq = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, families.data());
    for (uint32_t q = 0; q < nq; ++q) {
      if (families[q].queueCount &&
          families[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        physical = d;
        queueFamily = q;
        break;
      }
    }
    if (physical)
      break;
  }
  if (!physical)
    return Status::error("no Vulkan device with a compute queue among " +
                             std::to_string(count) + " device(s)",
                         kNoDeviceExit);
  vk.vkGetPhysicalDeviceProperties(physical, &props);
  vk.vkGetPhysicalDeviceMemoryProperties(physical, &memProps);
  devName = props.deviceName;
  if (verbose)
    std::fprintf(stderr, "tang-vk-run: device \"%s\", Vulkan %u.%u.%u%s\n",
                 devName.c_str(), VK_API_VERSION_MAJOR(props.apiVersion),
                 VK_API_VERSION_MINOR(props.apiVersion),
                 VK_API_VERSION_PATCH(props.apiVersion),
                 layers.empty() ? "" : ", validation on");
  return {};
}

/// The name of a capability createDevice knows, for error messages.
const char *capabilityName(uint32_t cap) {
  switch (cap) {
  case kCapFloat16:
    return "Float16";
  case kCapFloat64:
    return "Float64";
  case kCapInt64:
    return "Int64";
  case kCapInt16:
    return "Int16";
  case kCapInt8:
    return "Int8";
  case kCapStorageBuffer16BitAccess:
    return "StorageBuffer16BitAccess";
  case kCapStorageBuffer8BitAccess:
    return "StorageBuffer8BitAccess";
  }
  return "?";
}

Status Runner::createDevice(const SpirvInfo &info) {
  // Query the optional features the module's capabilities need, through the
  // Features2 chain (core in Vulkan 1.1 and 1.2), and enable exactly those.
  bool has11 = props.apiVersion >= VK_API_VERSION_1_1;
  bool has12 = props.apiVersion >= VK_API_VERSION_1_2;
  VkPhysicalDevice8BitStorageFeatures storage8{};
  storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16i8.pNext = &storage8;
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  storage16.pNext = has12 ? &f16i8 : nullptr;
  VkPhysicalDeviceFeatures2 supported{};
  supported.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  if (has11) {
    supported.pNext = &storage16;
    vk.vkGetPhysicalDeviceFeatures2(physical, &supported);
  } else {
    vk.vkGetPhysicalDeviceFeatures(physical, &supported.features);
  }

  VkPhysicalDevice8BitStorageFeatures want8{};
  want8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features wantF16I8{};
  wantF16I8.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  wantF16I8.pNext = &want8;
  VkPhysicalDevice16BitStorageFeatures want16{};
  want16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  want16.pNext = has12 ? &wantF16I8 : nullptr;
  VkPhysicalDeviceFeatures2 want{};
  want.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  want.pNext = has11 ? &want16 : nullptr;

  for (uint32_t cap : info.capabilities) {
    VkBool32 *have = nullptr, *enable = nullptr;
    switch (cap) {
    case kCapFloat64:
      have = &supported.features.shaderFloat64;
      enable = &want.features.shaderFloat64;
      break;
    case kCapInt64:
      have = &supported.features.shaderInt64;
      enable = &want.features.shaderInt64;
      break;
    case kCapInt16:
      have = &supported.features.shaderInt16;
      enable = &want.features.shaderInt16;
      break;
    case kCapStorageBuffer16BitAccess:
      have = &storage16.storageBuffer16BitAccess;
      enable = &want16.storageBuffer16BitAccess;
      break;
    case kCapFloat16:
      have = &f16i8.shaderFloat16;
      enable = &wantF16I8.shaderFloat16;
      break;
    case kCapInt8:
      have = &f16i8.shaderInt8;
      enable = &wantF16I8.shaderInt8;
      break;
    case kCapStorageBuffer8BitAccess:
      have = &storage8.storageBuffer8BitAccess;
      enable = &want8.storageBuffer8BitAccess;
      break;
    default:
      continue; // Core, or left to the driver to reject.
    }
    if (!*have)
      return Status::error(std::string("the SPIR-V module needs capability ") +
                           capabilityName(cap) + ", which \"" + devName +
                           "\" does not support");
    *enable = VK_TRUE;
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = queueFamily;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &want;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VK_CALL(vkCreateDevice, physical, &dci, nullptr, &device);

#define LOAD(name)                                                             \
  vk.name =                                                                    \
      reinterpret_cast<PFN_##name>(vk.vkGetDeviceProcAddr(device, #name));     \
  if (!vk.name)                                                                \
    return Status::error("the Vulkan device lacks " #name);
  TANG_VK_DEVICE_FNS(LOAD)
#undef LOAD
  vk.vkGetDeviceQueue(device, queueFamily, 0, &queue);
  return {};
}

Status Runner::createBuffer(size_t bytes, DeviceBuffer &b) {
  // Vulkan has no empty buffers: a zero-element tensor still gets 4 bytes.
  b.size = std::max<VkDeviceSize>(bytes, 4);
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = b.size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK_CALL(vkCreateBuffer, device, &bci, nullptr, &b.buffer);
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(device, b.buffer, &req);

  // Prefer host-visible and coherent memory; fall back to host-visible with
  // explicit flushes and invalidations.
  uint32_t type = UINT32_MAX;
  const VkMemoryPropertyFlags kPreferred = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (VkMemoryPropertyFlags flags :
       {kPreferred,
        VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)}) {
    for (uint32_t i = 0; i < memProps.memoryTypeCount && type == UINT32_MAX;
         ++i)
      if ((req.memoryTypeBits & (1u << i)) &&
          (memProps.memoryTypes[i].propertyFlags & flags) == flags)
        type = i;
    if (type != UINT32_MAX)
      break;
  }
  if (type == UINT32_MAX)
    return Status::error("\"" + devName +
                         "\" has no host-visible memory type for storage "
                         "buffers");
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  VK_CALL(vkAllocateMemory, device, &mai, nullptr, &b.memory);
  VK_CALL(vkBindBufferMemory, device, b.buffer, b.memory, 0);
  VK_CALL(vkMapMemory, device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  return {};
}

Status Runner::checkLimits(const Function &f) {
  const VkPhysicalDeviceLimits &lim = props.limits;
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const Launch &l = f.launches[i];
    std::string what = "launch #" + std::to_string(i) + " (" + l.kernel + ")";
    uint64_t invocations = uint64_t(l.block[0]) * l.block[1] * l.block[2];
    for (int d = 0; d < 3; ++d) {
      if (l.grid[d] > lim.maxComputeWorkGroupCount[d])
        return Status::error(what + ": grid[" + std::to_string(d) +
                             "] = " + std::to_string(l.grid[d]) +
                             " exceeds the device's maxComputeWorkGroupCount " +
                             std::to_string(lim.maxComputeWorkGroupCount[d]));
      if (l.block[d] > lim.maxComputeWorkGroupSize[d])
        return Status::error(what + ": block[" + std::to_string(d) +
                             "] = " + std::to_string(l.block[d]) +
                             " exceeds the device's maxComputeWorkGroupSize " +
                             std::to_string(lim.maxComputeWorkGroupSize[d]));
    }
    if (invocations > lim.maxComputeWorkGroupInvocations)
      return Status::error(what + ": " + std::to_string(invocations) +
                           " invocations per workgroup exceed the device's " +
                           std::to_string(lim.maxComputeWorkGroupInvocations));
    if (uint64_t(l.sharedBytes) > lim.maxComputeSharedMemorySize)
      return Status::error(what + ": " + std::to_string(l.sharedBytes) +
                           " bytes of shared memory exceed the device's " +
                           std::to_string(lim.maxComputeSharedMemorySize));
    if (l.buffers.size() > lim.maxPerStageDescriptorStorageBuffers)
      return Status::error(
          what + ": " + std::to_string(l.buffers.size()) +
          " buffer parameters exceed the device's " +
          std::to_string(lim.maxPerStageDescriptorStorageBuffers) +
          " storage buffers per stage");
  }
  auto checkSize = [&](const BufferSpec &b, const std::string &what) -> Status {
    if (b.bytes() > lim.maxStorageBufferRange)
      return Status::error(what + " " + shapeString(b.shape) + " " +
                           dtypeName(b.dtype) + ": " +
                           std::to_string(b.bytes()) +
                           " bytes exceed the device's maxStorageBufferRange " +
                           std::to_string(lim.maxStorageBufferRange));
    return {};
  };
  for (size_t i = 0; i < f.args.size(); ++i)
    TRY(checkSize(f.args[i], "argument #" + std::to_string(i)));
  for (size_t i = 0; i < f.temporaries.size(); ++i)
    TRY(checkSize(f.temporaries[i], "temporary #" + std::to_string(i)));
  return {};
}

Status Runner::run(const Function &f, const std::vector<uint32_t> &spirv,
                   const SpirvInfo &info,
                   const std::vector<std::string> &inputs,
                   const std::string &outDir) {
  TRY(checkLimits(f));
  TRY(createDevice(info));

  // One buffer per argument, then one per temporary. Inputs are uploaded;
  // everything else is poisoned with 0xff bytes (NaN for floats) so that an
  // element a kernel fails to write shows.
  std::vector<const BufferSpec *> specs;
  for (const BufferSpec &b : f.args)
    specs.push_back(&b);
  for (const BufferSpec &b : f.temporaries)
    specs.push_back(&b);
  buffers.resize(specs.size());
  size_t nextInput = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const BufferSpec &b = *specs[i];
    TRY(createBuffer(b.bytes(), buffers[i]));
    if (i < f.args.size() && b.role == BufferSpec::Role::Input) {
      const std::string &data = inputs[nextInput++];
      std::memcpy(buffers[i].mapped, data.data(), data.size());
    } else {
      std::memset(buffers[i].mapped, 0xff, b.bytes());
    }
  }
  std::vector<VkMappedMemoryRange> ranges;
  for (const DeviceBuffer &b : buffers) {
    VkMappedMemoryRange range{};
    range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    range.memory = b.memory;
    range.size = VK_WHOLE_SIZE;
    ranges.push_back(range);
  }
  VK_CALL(vkFlushMappedMemoryRanges, device, uint32_t(ranges.size()),
          ranges.data());

  VkShaderModuleCreateInfo smci{};
  smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smci.codeSize = spirv.size() * 4;
  smci.pCode = spirv.data();
  VK_CALL(vkCreateShaderModule, device, &smci, nullptr, &module);

  // Per launch: a set layout with the kernel's buffer parameters at bindings
  // 0..n-1 of set 0 (as tang-lower-spirv decorates them), a pipeline for its
  // entry point and a descriptor set.
  uint32_t totalDescriptors = 0;
  for (const Launch &l : f.launches)
    totalDescriptors += uint32_t(l.buffers.size());
  VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                std::max(totalDescriptors, 1u)};
  VkDescriptorPoolCreateInfo dpci{};
  dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dpci.maxSets = std::max<uint32_t>(uint32_t(f.launches.size()), 1);
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &poolSize;
  VK_CALL(vkCreateDescriptorPool, device, &dpci, nullptr, &descriptorPool);

  std::vector<VkDescriptorSet> sets(f.launches.size());
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const Launch &l = f.launches[i];
    std::vector<VkDescriptorSetLayoutBinding> bindings(l.buffers.size());
    for (uint32_t p = 0; p < bindings.size(); ++p) {
      bindings[p].binding = p;
      bindings[p].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[p].descriptorCount = 1;
      bindings[p].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dslci{};
    dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dslci.bindingCount = uint32_t(bindings.size());
    dslci.pBindings = bindings.data();
    setLayouts.push_back(VK_NULL_HANDLE);
    VK_CALL(vkCreateDescriptorSetLayout, device, &dslci, nullptr,
            &setLayouts.back());

    VkPipelineLayoutCreateInfo plci{};
    plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &setLayouts.back();
    pipelineLayouts.push_back(VK_NULL_HANDLE);
    VK_CALL(vkCreatePipelineLayout, device, &plci, nullptr,
            &pipelineLayouts.back());

    VkComputePipelineCreateInfo cpci{};
    cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = l.kernel.c_str();
    cpci.layout = pipelineLayouts.back();
    pipelines.push_back(VK_NULL_HANDLE);
    VK_CALL(vkCreateComputePipelines, device, VK_NULL_HANDLE, 1, &cpci, nullptr,
            &pipelines.back());

    VkDescriptorSetAllocateInfo dsai{};
    dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    dsai.descriptorPool = descriptorPool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &setLayouts.back();
    VK_CALL(vkAllocateDescriptorSets, device, &dsai, &sets[i]);

    std::vector<VkDescriptorBufferInfo> infos(l.buffers.size());
    std::vector<VkWriteDescriptorSet> writes(l.buffers.size());
    for (uint32_t p = 0; p < l.buffers.size(); ++p) {
      infos[p] = {buffers[l.buffers[p]].buffer, 0, VK_WHOLE_SIZE};
      writes[p].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[p].dstSet = sets[i];
      writes[p].dstBinding = p;
      writes[p].descriptorCount = 1;
      writes[p].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[p].pBufferInfo = &infos[p];
    }
    vk.vkUpdateDescriptorSets(device, uint32_t(writes.size()), writes.data(), 0,
                              nullptr);
  }

  // Record the launches in order, a compute->compute barrier between two.
  VkCommandPoolCreateInfo cpoolci{};
  cpoolci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpoolci.queueFamilyIndex = queueFamily;
  VK_CALL(vkCreateCommandPool, device, &cpoolci, nullptr, &commandPool);
  VkCommandBufferAllocateInfo cbai{};
  cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cbai.commandPool = commandPool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK_CALL(vkAllocateCommandBuffers, device, &cbai, &cmd);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CALL(vkBeginCommandBuffer, cmd, &begin);
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const Launch &l = f.launches[i];
    if (i > 0)
      vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                              &barrier, 0, nullptr, 0, nullptr);
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines[i]);
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                               pipelineLayouts[i], 0, 1, &sets[i], 0, nullptr);
    vk.vkCmdDispatch(cmd, l.grid[0], l.grid[1], l.grid[2]);
  }
  // Make the last writes visible to the host.
  VkMemoryBarrier toHost{};
  toHost.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  toHost.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0, nullptr,
                          0, nullptr);
  VK_CALL(vkEndCommandBuffer, cmd);

  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VK_CALL(vkCreateFence, device, &fci, nullptr, &fence);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  VK_CALL(vkQueueSubmit, queue, 1, &submit, fence);
  // A minute at most: lavapipe runs kernels on the CPU.
  VK_CALL(vkWaitForFences, device, 1, &fence, VK_TRUE,
          uint64_t(60) * 1000 * 1000 * 1000);
  VK_CALL(vkInvalidateMappedMemoryRanges, device, uint32_t(ranges.size()),
          ranges.data());

  // Summarise and write the outputs.
  size_t k = 0;
  for (size_t i = 0; i < f.args.size(); ++i) {
    const BufferSpec &b = f.args[i];
    if (b.role != BufferSpec::Role::Output)
      continue;
    size_t n = size_t(b.elements()), nans = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t e = 0; e < n; ++e) {
      const char *p = static_cast<const char *>(buffers[i].mapped);
      double x;
      if (b.dtype == DType::F32) {
        float v;
        std::memcpy(&v, p + 4 * e, 4);
        x = v;
      } else if (b.dtype == DType::F64) {
        std::memcpy(&x, p + 8 * e, 8);
      } else {
        int32_t v;
        std::memcpy(&v, p + 4 * e, 4);
        x = v;
      }
      if (std::isnan(x)) {
        ++nans;
        continue;
      }
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    std::string nanNote = nans ? "  NaN " + std::to_string(nans) : "";
    std::printf("  output #%zu  %s %s  min %g  max %g%s\n", k,
                shapeString(b.shape).c_str(), dtypeName(b.dtype), lo, hi,
                nanNote.c_str());
    if (!outDir.empty())
      TRY(writeNpy(outDir + "/output_" + std::to_string(k) + ".npy", b,
                   buffers[i].mapped));
    ++k;
  }
  return {};
}

void Runner::destroy() {
  if (device) {
    if (fence)
      vk.vkDestroyFence(device, fence, nullptr);
    if (commandPool)
      vk.vkDestroyCommandPool(device, commandPool, nullptr);
    if (descriptorPool)
      vk.vkDestroyDescriptorPool(device, descriptorPool, nullptr);
    for (VkPipeline p : pipelines)
      if (p)
        vk.vkDestroyPipeline(device, p, nullptr);
    for (VkPipelineLayout l : pipelineLayouts)
      if (l)
        vk.vkDestroyPipelineLayout(device, l, nullptr);
    for (VkDescriptorSetLayout l : setLayouts)
      if (l)
        vk.vkDestroyDescriptorSetLayout(device, l, nullptr);
    if (module)
      vk.vkDestroyShaderModule(device, module, nullptr);
    for (DeviceBuffer &b : buffers) {
      if (b.mapped)
        vk.vkUnmapMemory(device, b.memory);
      if (b.buffer)
        vk.vkDestroyBuffer(device, b.buffer, nullptr);
      if (b.memory)
        vk.vkFreeMemory(device, b.memory, nullptr);
    }
    vk.vkDestroyDevice(device, nullptr);
    device = VK_NULL_HANDLE;
  }
  if (instance) {
    vk.vkDestroyInstance(instance, nullptr);
    instance = VK_NULL_HANDLE;
  }
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

const char *const kUsage =
    "usage: tang-vk-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR]\n"
    "       tang-vk-run --probe\n"
    "\n"
    "Runs FUNCTION of the tang SPIR-V bundle in BUNDLE_DIR (manifest.json\n"
    "plus its .spv module, from tang-opt --tang-lower-spirv=\"bundle=DIR\")\n"
    "on the first Vulkan device with a compute queue, with one .npy file per\n"
    "input argument, in manifest order (f32/f64 buffers take <f4 or <f8,\n"
    "i32 buffers <i4 or <i8).\n"
    "\n"
    "options:\n"
    "  --out DIR   write output #k to DIR/output_<k>.npy (floats as float64,\n"
    "              i32 as int32)\n"
    "  --probe     only find the device: print its name, exit 0, or 2 when\n"
    "              there is no Vulkan loader, driver or device\n"
    "  -v          print the device used\n"
    "  -h, --help  this text\n"
    "\n"
    "environment: TANG_VK_VALIDATE=1 enables VK_LAYER_KHRONOS_validation when\n"
    "it is installed.\n"
    "\n"
    "exit codes: 0 success, 1 error, 2 no Vulkan loader, driver or device\n";

/// The command line.
struct Options {
  std::string bundleDir;
  std::string function;
  std::vector<std::string> inputs;
  std::string outDir;
  bool probe = false;
  bool verbose = false;
};

Status parseArgs(int argc, char **argv, Options &o) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a == "--out" || a.rfind("--out=", 0) == 0) {
      if (a == "--out") {
        if (i + 1 >= argc)
          return Status::error("--out needs a directory");
        o.outDir = argv[++i];
      } else {
        o.outDir = a.substr(6);
      }
      if (o.outDir.empty())
        return Status::error("--out needs a directory");
    } else if (a == "--probe") {
      o.probe = true;
    } else if (a == "-v") {
      o.verbose = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return Status::error("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (o.probe)
    return positional.empty()
               ? Status()
               : Status::error("--probe takes no other arguments");
  if (positional.size() < 2)
    return Status::error("expected BUNDLE_DIR and FUNCTION");
  o.bundleDir = positional[0];
  o.function = positional[1];
  o.inputs.assign(positional.begin() + 2, positional.end());
  return {};
}

/// Creates `dir` and its parents when missing.
Status makeDirs(const std::string &dir) {
  std::string prefix;
  std::stringstream parts(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/')
    prefix = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    prefix += part + "/";
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return Status::error("cannot create " + prefix + ": " +
                           std::strerror(errno));
  }
  return {};
}

Status runMain(const Options &o, Runner &runner) {
  bool validate = false;
  if (const char *v = std::getenv("TANG_VK_VALIDATE"))
    validate = std::strcmp(v, "1") == 0;

  if (o.probe) {
    TRY(runner.init(validate, o.verbose));
    std::printf("%s\n", runner.deviceName().c_str());
    return {};
  }

  // Everything that needs no device first: the manifest, the module, the
  // inputs.
  std::string text;
  TRY(readFile(o.bundleDir + "/manifest.json", text));
  Json root;
  Status parsed = JsonParser(text).parse(root);
  if (!parsed)
    return Status::error(o.bundleDir +
                         "/manifest.json: " + parsed.getFailure().message);
  Manifest manifest;
  TRY(ManifestReader().read(root, manifest));
  const Function *f = nullptr;
  std::string names;
  for (const Function &g : manifest.functions) {
    names += (names.empty() ? "" : ", ") + ("@" + g.name);
    if (g.name == o.function)
      f = &g;
  }
  if (!f)
    return Status::error("the bundle has no function @" + o.function +
                         " (it has: " + (names.empty() ? "none" : names) + ")");

  auto unsupported = [&](const BufferSpec &b, const std::string &what) {
    return Status::error("@" + f->name + " " + what + ": dtype " +
                         dtypeName(b.dtype) +
                         " is not supported by tang-vk-run yet (f32, f64 "
                         "and i32 are)");
  };
  // Temporaries are never read or written by the host: any dtype will do.
  size_t nInputs = 0;
  for (size_t i = 0; i < f->args.size(); ++i) {
    if (!isSupportedIO(f->args[i].dtype))
      return unsupported(f->args[i], "argument #" + std::to_string(i));
    nInputs += f->args[i].role == BufferSpec::Role::Input;
  }
  if (o.inputs.size() != nInputs)
    return Status::error("@" + f->name + " takes " + std::to_string(nInputs) +
                         " input(s), got " + std::to_string(o.inputs.size()) +
                         " .npy file(s)");

  // Each input converted to its buffer's contents.
  std::vector<std::string> inputs(nInputs);
  for (size_t i = 0, k = 0; i < f->args.size(); ++i) {
    const BufferSpec &b = f->args[i];
    if (b.role != BufferSpec::Role::Input)
      continue;
    Npy npy;
    TRY(readNpy(o.inputs[k], npy));
    std::string what = o.inputs[k] + " (input #" + std::to_string(k) + ")";
    if (npy.shape != b.shape)
      return Status::error(what + ": shape " + shapeString(npy.shape) +
                           ", but input #" + std::to_string(k) + " of @" +
                           f->name + " is " + shapeString(b.shape));
    inputs[k].resize(b.bytes());
    TRY(convertInput(npy, b, what, inputs[k].data()));
    ++k;
  }

  std::string imagePath = o.bundleDir + "/" + manifest.image;
  std::string image;
  TRY(readFile(imagePath, image));
  if (image.size() % 4 != 0)
    return Status::error(imagePath + ": not a SPIR-V module (" +
                         std::to_string(image.size()) +
                         " bytes, not a whole number of words)");
  std::vector<uint32_t> spirv(image.size() / 4);
  std::memcpy(spirv.data(), image.data(), image.size());
  SpirvInfo info;
  TRY(inspectSpirv(spirv, imagePath, info));
  TRY(checkEntryPoints(*f, info));

  if (!o.outDir.empty())
    TRY(makeDirs(o.outDir));
  TRY(runner.init(validate, o.verbose));
  std::printf("tang-vk-run: @%s on \"%s\": %zu launch(es)\n", f->name.c_str(),
              runner.deviceName().c_str(), f->launches.size());
  TRY(runner.run(*f, spirv, info, inputs, o.outDir));
  if (!o.outDir.empty())
    std::printf("  wrote the outputs to %s\n", o.outDir.c_str());
  return {};
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  Status s = parseArgs(argc, argv, o);
  if (!s) {
    std::fprintf(stderr, "tang-vk-run: %s\n\n%s",
                 s.getFailure().message.c_str(), kUsage);
    return 1;
  }
  Runner runner;
  s = runMain(o, runner);
  if (!s) {
    std::fprintf(stderr, "tang-vk-run: error: %s\n",
                 s.getFailure().message.c_str());
    return s.getFailure().exitCode;
  }
  return 0;
}
