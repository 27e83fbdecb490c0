//===- Manifest.cpp - The tang bundle manifest ------------------*- C++ -*-===//
//
// A strict RFC 8259 JSON parser and the manifest validation shared by the
// tang host runtimes.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

using namespace tang::runtime;

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// The whole file at `path`.
Expected<std::string> tang::runtime::readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::failure("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error::failure("cannot read " + path);
  return ss.str();
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
  ManifestReader(std::string where, Manifest::FormatCheck checkFormat)
      : where(std::move(where)), checkFormat(checkFormat) {}

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
      if (const Json *data = v.get("data")) {
        if (data->kind != Json::Kind::String || data->string.empty() ||
            data->string.find('/') != std::string::npos ||
            data->string.find("..") != std::string::npos)
          return fail(join(path, "data"),
                      "expected the name of a file of the bundle");
        b.data = data->string;
      }
    } else {
      const Json *role = member(v, path, "role", Json::Kind::String);
      if (!role)
        return false;
      if (role->string == "input")
        b.role = BufferSpec::Role::Input;
      else if (role->string == "output")
        b.role = BufferSpec::Role::Output;
      else if (role->string == "size")
        b.role = BufferSpec::Role::Size;
      else
        return fail(join(path, "role"), "unknown role \"" + role->string +
                                            "\" (expected \"input\", "
                                            "\"output\" or \"size\")");
      // An index argument: a scalar the caller gives, no buffer.
      if (b.role == BufferSpec::Role::Size)
        return v.object.size() == 1 ||
               fail(path, "a size argument has only a \"role\"");
    }
    if (const Json *alias = v.get("alias")) {
      int64_t k;
      if (b.role != BufferSpec::Role::Output)
        return fail(join(path, "alias"), "only an output aliases an input");
      if (!readInt(*alias, join(path, "alias"), 0,
                   std::numeric_limits<int32_t>::max(), k))
        return false;
      b.aliasOf = int(k);
    }
    const Json *shape = member(v, path, "shape", Json::Kind::Array);
    if (!shape)
      return false;
    // Bound the element count so that byte sizes cannot overflow.
    constexpr int64_t kMaxElements = int64_t(1) << 48;
    int64_t count = 1;
    for (size_t i = 0; i < shape->array.size(); ++i) {
      // A dimension given by a size: [constant, coefficients...].
      if (shape->array[i].kind == Json::Kind::Array) {
        SizeExpr e;
        if (!readSize(shape->array[i], index(join(path, "shape"), i), e))
          return false;
        b.shape.push_back(-1);
        b.sizes.resize(shape->array.size());
        b.sizes[i] = std::move(e);
        continue;
      }
      int64_t d;
      if (!readInt(shape->array[i], index(join(path, "shape"), i), 0,
                   kMaxElements, d))
        return false;
      if (d && count > kMaxElements / d)
        return fail(join(path, "shape"), "too many elements");
      count *= d;
      b.shape.push_back(d);
    }
    b.sizes.resize(b.shape.size());
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

  /// Reads a size: a non-empty array of integers.
  bool readSize(const Json &v, const std::string &path, SizeExpr &out) {
    if (v.kind != Json::Kind::Array || v.array.empty())
      return fail(path, "expected a size ([constant, coefficients...])");
    constexpr int64_t kMax = int64_t(1) << 48;
    for (size_t i = 0; i < v.array.size(); ++i) {
      int64_t t;
      if (!readInt(v.array[i], index(path, i), -kMax, kMax, t))
        return false;
      out.terms.push_back(t);
    }
    return true;
  }

  /// Reads a function's "sizes" and "requirements", if it has them.
  bool readSizes(const Json &v, const std::string &path, FunctionSpec &f) {
    const Json *sizes = v.get("sizes");
    const Json *reqs = v.get("requirements");
    if (!sizes && !reqs)
      return true;
    sizes = member(v, path, "sizes", Json::Kind::Array);
    reqs = sizes ? member(v, path, "requirements", Json::Kind::Array) : nullptr;
    if (!reqs)
      return false;
    for (size_t i = 0; i < sizes->array.size(); ++i) {
      const Json &s = sizes->array[i];
      std::string p = index(join(path, "sizes"), i);
      SizeSymbolSpec sym;
      int64_t arg, dim = -1;
      const Json *a = s.kind == Json::Kind::Object ? s.get("arg") : nullptr;
      if (!a)
        return fail(p, "expected {\"arg\": i, \"dim\": d?, \"name\": s}");
      if (!readInt(*a, join(p, "arg"), 0, int64_t(f.args.size()) - 1, arg) ||
          !readName(s, p, "name", sym.name))
        return false;
      if (const Json *d = s.get("dim")) {
        if (!readInt(*d, join(p, "dim"), 0, 63, dim))
          return false;
        const BufferSpec &b = f.args[arg];
        if (b.role != BufferSpec::Role::Input || size_t(dim) >= b.shape.size())
          return fail(p, "names no dimension of an input");
      } else if (f.args[arg].role != BufferSpec::Role::Size) {
        return fail(p, "names an argument that is not a size");
      }
      sym.arg = unsigned(arg);
      sym.dim = int(dim);
      f.sizes.push_back(std::move(sym));
    }
    for (size_t i = 0; i < reqs->array.size(); ++i) {
      const Json &r = reqs->array[i];
      std::string p = index(join(path, "requirements"), i);
      RequirementSpec req;
      const Json *size = r.kind == Json::Kind::Object ? r.get("size") : nullptr;
      if (!size)
        return fail(p, "expected {\"size\", \"what\", \"condition\"}");
      if (!readSize(*size, join(p, "size"), req.size) ||
          !readName(r, p, "what", req.what) ||
          !readName(r, p, "condition", req.condition))
        return false;
      f.requirements.push_back(std::move(req));
    }
    return true;
  }

  /// Reads a function's "index_checks", if it has them.
  bool readIndexChecks(const Json &v, const std::string &path,
                       FunctionSpec &f) {
    if (!v.get("index_checks"))
      return true;
    const Json *checks = member(v, path, "index_checks", Json::Kind::Array);
    if (!checks)
      return false;
    for (size_t i = 0; i < checks->array.size(); ++i) {
      const Json &c = checks->array[i];
      std::string p = index(join(path, "index_checks"), i);
      const Json *arg = c.kind == Json::Kind::Object ? c.get("arg") : nullptr;
      const Json *bound = arg ? c.get("bound") : nullptr;
      if (!bound)
        return fail(p, "expected {\"arg\", \"bound\", \"what\"}");
      IndexCheckSpec check;
      int64_t a;
      if (!readInt(*arg, join(p, "arg"), 0, int64_t(f.args.size()) - 1, a) ||
          !readInt(*bound, join(p, "bound"), 1, int64_t(1) << 48,
                   check.bound) ||
          !readName(c, p, "what", check.what))
        return false;
      const BufferSpec &b = f.args[size_t(a)];
      if (b.role != BufferSpec::Role::Input ||
          (b.dtype != DType::I32 && b.dtype != DType::I8))
        return fail(join(p, "arg"), "names no integer input");
      check.arg = unsigned(a);
      f.indexChecks.push_back(std::move(check));
    }
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
      if (const Json *sizes = a.get("sizes")) {
        if (a.object.size() != 1 || sizes->kind != Json::Kind::Bool ||
            !sizes->boolean)
          return fail(p, "the sizes buffer is {\"sizes\": true}");
        LaunchArg la;
        la.isSizes = true;
        l.args.push_back(la);
        continue;
      }
      const Json *arg = a.get("arg"), *temp = a.get("temp");
      const Json *map = a.get("tensor_map");
      if ((arg != nullptr) == (temp != nullptr) ||
          a.object.size() != (map ? 2u : 1u))
        return fail(p, "expected exactly one of {\"arg\": i} or {\"temp\": "
                       "i}, and optionally \"tensor_map\"");
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
      if (!la.isTemporary && f.args[la.index].role == BufferSpec::Role::Size)
        return fail(join(p, "arg"),
                    "arg " + std::to_string(k) + " is a size, not a buffer");
      if (map) {
        const BufferSpec &b =
            la.isTemporary ? f.temporaries[la.index] : f.args[la.index];
        for (int64_t d : b.shape)
          if (d < 0)
            return fail(join(p, "tensor_map"),
                        "a tensor map over a buffer of symbolic shape");
        if (!readTensorMap(*map, join(p, "tensor_map"), b, la))
          return false;
      }
      l.args.push_back(std::move(la));
    }
    return true;
  }

  /// Reads a tensor map over buffer `b` and checks what
  /// cuTensorMapEncodeTiled requires of it.
  bool readTensorMap(const Json &v, const std::string &path,
                     const BufferSpec &b, LaunchArg &la) {
    if (v.kind != Json::Kind::Object)
      return fail(path,
                  std::string("expected an object, got ") + kindName(v.kind));
    for (const auto &[key, value] : v.object)
      if (key != "box" && key != "swizzle")
        return fail(join(path, key), "unknown field");
    const Json *box = member(v, path, "box", Json::Kind::Array);
    const Json *swizzle = box ? v.get("swizzle") : nullptr;
    if (!box)
      return false;
    if (!swizzle)
      return fail(path, "missing field \"swizzle\"");
    TensorMapSpec t;
    int64_t s;
    if (!readInt(*swizzle, join(path, "swizzle"), 0, 128, s))
      return false;
    if (s != 0 && s != 32 && s != 64 && s != 128)
      return fail(join(path, "swizzle"),
                  std::to_string(s) + " is not 0, 32, 64 or 128");
    t.swizzle = unsigned(s);
    size_t rank = b.shape.size();
    if (rank < 1 || rank > 5)
      return fail(path, "a tensor map needs a buffer of rank 1 to 5, got " +
                            std::to_string(rank));
    if (b.dtype == DType::I1)
      return fail(path, "a tensor map cannot describe an i1 buffer");
    if (box->array.size() != rank)
      return fail(join(path, "box"),
                  "has " + std::to_string(box->array.size()) +
                      " dimensions; the buffer has " + std::to_string(rank));
    for (size_t i = 0; i < rank; ++i) {
      int64_t d;
      if (!readInt(box->array[i], index(join(path, "box"), i), 1, 256, d))
        return false;
      t.box.push_back(d);
    }
    size_t bytes = dtypeBytes(b.dtype);
    if ((t.box.back() * bytes) % 16 != 0)
      return fail(join(path, "box"),
                  "the innermost box dimension must span a multiple of 16 "
                  "bytes");
    if (t.swizzle && t.box.back() * bytes > t.swizzle)
      return fail(join(path, "box"),
                  "the innermost box dimension spans more than the " +
                      std::to_string(t.swizzle) + "-byte swizzle");
    if (rank > 1 && (b.shape.back() * bytes) % 16 != 0)
      return fail(path, "the buffer's rows must be a multiple of 16 bytes "
                        "for a tensor map");
    la.tensorMap = std::move(t);
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
    if (!readSizes(v, path, f) || !readIndexChecks(v, path, f))
      return false;
    for (size_t i = 0; i < f.args.size(); ++i) {
      const BufferSpec &out = f.args[i];
      int k = out.aliasOf;
      if (k < 0)
        continue;
      bool same = size_t(k) < f.args.size();
      if (same) {
        const BufferSpec &in = f.args[size_t(k)];
        same = in.role == BufferSpec::Role::Input && in.dtype == out.dtype &&
               in.shape == out.shape;
        for (size_t d = 0; same && d < in.shape.size(); ++d)
          same = (in.sizes[d] ? in.sizes[d]->terms : std::vector<int64_t>()) ==
                 (out.sizes[d] ? out.sizes[d]->terms : std::vector<int64_t>());
      }
      if (!same)
        return fail(index(join(path, "args"), i) + ".alias",
                    "arg " + std::to_string(k) +
                        " is not an input of the output's shape and dtype");
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
    std::string formatError = checkFormat(format->string);
    if (!formatError.empty())
      return fail("format", formatError);
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
  Manifest::FormatCheck checkFormat;
  std::string error;
};

} // namespace

const char *tang::runtime::dtypeName(DType type) {
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

size_t tang::runtime::dtypeBytes(DType type) {
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

std::optional<DType> tang::runtime::parseDType(const std::string &name) {
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

size_t FunctionSpec::numOutputs() const {
  size_t n = 0;
  for (const BufferSpec &b : args)
    n += b.role == BufferSpec::Role::Output;
  return n;
}

bool FunctionSpec::isSymbolic() const {
  if (!sizes.empty() || !requirements.empty())
    return true;
  for (const BufferSpec &b : args)
    if (b.role == BufferSpec::Role::Size)
      return true;
  for (const LaunchSpec &l : launches)
    for (const LaunchArg &a : l.args)
      if (a.isSizes)
        return true;
  return false;
}

int64_t SizeExpr::evaluate(const std::vector<int64_t> &symbols) const {
  int64_t v = terms.empty() ? 0 : terms[0];
  for (size_t i = 1; i < terms.size(); ++i)
    v += terms[i] * (i - 1 < symbols.size() ? symbols[i - 1] : 0);
  return v;
}

Expected<FunctionSpec>
FunctionSpec::instantiate(const std::vector<std::vector<int64_t>> &inputShapes,
                          const std::map<unsigned, int64_t> &sizeArgs) const {
  if (!isSymbolic())
    return *this;
  auto fail = [&](const std::string &msg) -> Expected<FunctionSpec> {
    return Error::failure("'" + name + "': " + msg);
  };
  // The inputs by argument number.
  std::map<unsigned, size_t> inputOf;
  for (size_t i = 0, k = 0; i < args.size(); ++i)
    if (args[i].role == BufferSpec::Role::Input)
      inputOf[unsigned(i)] = k++;
  std::vector<int64_t> values;
  for (const SizeSymbolSpec &s : sizes) {
    int64_t v;
    if (s.dim < 0) {
      auto it = sizeArgs.find(s.arg);
      if (it == sizeArgs.end())
        return fail("argument #" + std::to_string(s.arg) + " is a size (" +
                    s.name + "): give it with --size arg" +
                    std::to_string(s.arg) + "=N");
      v = it->second;
    } else {
      size_t k = inputOf.at(s.arg);
      if (k >= inputShapes.size() || size_t(s.dim) >= inputShapes[k].size())
        return fail("input #" + std::to_string(k) + " has no dimension " +
                    std::to_string(s.dim) + " for " + s.name);
      v = inputShapes[k][s.dim];
    }
    if (v < 0)
      return fail(s.name + " = " + std::to_string(v) +
                  ": sizes are at least 0");
    values.push_back(v);
  }
  for (const auto &[arg, v] : sizeArgs)
    if (arg >= args.size() || args[arg].role != BufferSpec::Role::Size)
      return fail("--size arg" + std::to_string(arg) +
                  " names no size argument");
  for (const RequirementSpec &r : requirements) {
    if (r.size.evaluate(values) >= 0)
      continue;
    std::string used;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (i + 1 < r.size.terms.size() && r.size.terms[i + 1])
        used += (used.empty() ? "" : ", ") + sizes[i].name + " = " +
                std::to_string(values[i]);
    return fail("the sizes break a requirement: " + r.what + " only if " +
                r.condition + ", but " + used + "; nothing ran");
  }
  auto resolve = [&](BufferSpec b) -> Expected<BufferSpec> {
    for (size_t d = 0; d < b.shape.size(); ++d) {
      if (b.shape[d] >= 0)
        continue;
      b.shape[d] = b.sizes[d]->evaluate(values);
      if (b.shape[d] < 1)
        return Error::failure("'" + name + "': a buffer dimension is " +
                              std::to_string(b.shape[d]) + " at these sizes");
    }
    b.sizes.assign(b.shape.size(), std::nullopt);
    return b;
  };
  FunctionSpec out;
  out.name = name;
  std::vector<unsigned> argIndex(args.size(), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].role == BufferSpec::Role::Size)
      continue;
    Expected<BufferSpec> b = resolve(args[i]);
    if (!b)
      return b.takeError();
    argIndex[i] = unsigned(out.args.size());
    out.args.push_back(std::move(*b));
  }
  for (BufferSpec &b : out.args)
    if (b.aliasOf >= 0)
      b.aliasOf = int(argIndex[size_t(b.aliasOf)]);
  for (IndexCheckSpec c : indexChecks) {
    c.arg = argIndex[c.arg];
    out.indexChecks.push_back(std::move(c));
  }
  for (const BufferSpec &t : temporaries) {
    Expected<BufferSpec> b = resolve(t);
    if (!b)
      return b.takeError();
    out.temporaries.push_back(std::move(*b));
  }
  // The sizes buffer: one i32 per symbol (at least one element).
  BufferSpec buffer;
  buffer.role = BufferSpec::Role::Temporary;
  buffer.dtype = DType::I32;
  buffer.shape = {std::max<int64_t>(1, int64_t(values.size()))};
  buffer.sizes.resize(1);
  std::vector<int32_t> words(size_t(buffer.shape[0]), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > std::numeric_limits<int32_t>::max())
      return fail(sizes[i].name + " = " + std::to_string(values[i]) +
                  " does not fit the kernels' 32-bit sizes");
    words[i] = int32_t(values[i]);
  }
  buffer.init.resize(words.size() * sizeof(int32_t));
  std::memcpy(buffer.init.data(), words.data(), buffer.init.size());
  unsigned sizesIndex = unsigned(out.temporaries.size());
  out.temporaries.push_back(std::move(buffer));
  for (LaunchSpec l : launches) {
    for (LaunchArg &a : l.args) {
      if (a.isSizes) {
        a.isSizes = false;
        a.isTemporary = true;
        a.index = sizesIndex;
      } else if (!a.isTemporary) {
        a.index = argIndex[a.index];
      }
    }
    out.launches.push_back(std::move(l));
  }
  return out;
}

Error tang::runtime::parseSizeArg(const std::string &spec,
                                  std::map<unsigned, int64_t> &sizeArgs) {
  size_t eq = spec.find('=');
  auto bad = [&] {
    return Error::failure("--size " + spec +
                          ": expected argK=N (the index argument #K), N >= 0");
  };
  if (spec.rfind("arg", 0) != 0 || eq == std::string::npos || eq == 3 ||
      eq + 1 == spec.size())
    return bad();
  for (size_t i = 3; i < spec.size(); ++i)
    if (i != eq && (spec[i] < '0' || spec[i] > '9'))
      return bad();
  if (eq - 3 > 9 || spec.size() - eq - 1 > 18)
    return bad();
  unsigned arg = unsigned(std::stoul(spec.substr(3, eq - 3)));
  int64_t n = std::stoll(spec.substr(eq + 1));
  sizeArgs[arg] = n;
  return Error::success();
}

std::string Manifest::checkCudaFormat(const std::string &format) {
  if (format == "ptx" || format == "cubin")
    return "";
  return "unknown format \"" + format + "\" (expected \"ptx\" or \"cubin\")";
}

Expected<Manifest> Manifest::parse(const std::string &json,
                                   const std::string &where,
                                   FormatCheck checkFormat) {
  Expected<Json> root = JsonParser(json).parseDocument();
  if (!root)
    return root.takeError().withContext(where);
  return ManifestReader(where, checkFormat).read(*root);
}

Expected<Manifest> Manifest::loadFile(const std::string &path,
                                      FormatCheck checkFormat) {
  Expected<std::string> text = readFile(path);
  if (!text)
    return text.takeError();
  Expected<Manifest> m = parse(*text, path, checkFormat);
  if (!m)
    return m;
  // Tensor constants: their contents, from the files beside the manifest.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  for (FunctionSpec &f : m->functions)
    for (BufferSpec &t : f.temporaries) {
      if (t.data.empty())
        continue;
      Expected<std::string> bytes = readFile(dir + "/" + t.data);
      if (!bytes)
        return bytes.takeError();
      if (t.numElements() >= 0 && bytes->size() != t.numBytes())
        return Error::failure(dir + "/" + t.data + ": " +
                              std::to_string(bytes->size()) +
                              " bytes, but the constant of '" + f.name +
                              "' takes " + std::to_string(t.numBytes()));
      t.init.assign(bytes->begin(), bytes->end());
    }
  return m;
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
