//===- tang-fuzz-runtime.cpp - libFuzzer target: the runtimes' readers ----===//
//
// A libFuzzer target over what the host runtimes read from disk
// (runtime/common): every input is parsed as a .npy file and as a bundle
// manifest. A .npy that parses is converted into a buffer of each dtype
// that accepts it and written back; a manifest that parses has each
// function instantiated at sizes taken from the input's last bytes, its
// index checks run on a small input. Errors are expected and swallowed; a
// crash, an ASan or UBSan report, or a hang is a finding. scripts/fuzz.sh
// builds it (-DTANG_FUZZ=ON) and runs it from test/Fuzz/runtime (manifests
// and .npy files) after tang-fuzz.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "Npy.h"
#include "NpyFile.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tang::runtime;

namespace {

/// Converts a parsed .npy into a buffer of every dtype that accepts it.
void exerciseNpy(const Npy &npy) {
  (void)npyShapeString(npy.shape);
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I32,
                  DType::I8, DType::I1}) {
    if (!npyAccepts(t, npy.descr))
      continue;
    BufferSpec b;
    b.dtype = t;
    b.shape = npy.shape;
    // The runtimes size the buffer from the manifest, not the file: a
    // buffer of the file's shape (bounded, as a runtime's allocation is).
    int64_t elements = b.numElements();
    if (elements < 0 || elements > (int64_t(1) << 20))
      continue;
    std::vector<char> out(b.numBytes() + 1);
    (void)convertNpyInput(npy, b, "fuzz input", out.data());
  }
}

/// Instantiates each function of a parsed manifest at sizes read off
/// `extra` and runs its index checks on a small input of each shape.
void exerciseManifest(const Manifest &m, const uint8_t *extra, size_t n) {
  (void)m.functionNames();
  for (const FunctionSpec &f : m.functions) {
    (void)m.find(f.name);
    std::vector<std::vector<int64_t>> shapes;
    size_t at = 0;
    auto next = [&]() -> int64_t {
      // Small sizes mostly, now and then an extreme one.
      int64_t v = at < n ? extra[at++] : 3;
      if (v == 255)
        return int64_t(1) << 40;
      if (v == 254)
        return -1;
      return v % 16;
    };
    for (const BufferSpec &b : f.args) {
      if (b.role != BufferSpec::Role::Input)
        continue;
      std::vector<int64_t> shape;
      for (int64_t d : b.shape)
        shape.push_back(d < 0 ? next() : d);
      shapes.push_back(std::move(shape));
    }
    std::map<unsigned, int64_t> sizeArgs;
    for (unsigned i = 0; i < f.args.size(); ++i)
      if (f.args[i].role == BufferSpec::Role::Size)
        sizeArgs[i] = next();
    Expected<FunctionSpec> g = f.instantiate(shapes, sizeArgs);
    if (!g)
      continue;
    // The index checks read inputs of the instantiated shapes: small ones
    // only, filled with the input's bytes.
    std::vector<Npy> inputs;
    std::vector<std::string> names;
    bool small = true;
    for (const BufferSpec &b : g->args) {
      if (b.role != BufferSpec::Role::Input)
        continue;
      int64_t elements = b.numElements();
      if (elements < 0 || elements > 4096) {
        small = false;
        break;
      }
      Npy npy;
      npy.descr = b.dtype == DType::I32 ? "i4" : npyDescr(b.dtype);
      npy.typestr = "<" + npy.descr;
      npy.shape = b.shape;
      npy.data.assign(b.numBytes(), '\0');
      for (size_t i = 0; i < npy.data.size() && at < n; ++i)
        npy.data[i] = static_cast<char>(extra[at++]);
      inputs.push_back(std::move(npy));
      names.push_back("input " + std::to_string(inputs.size() - 1));
    }
    if (small && inputs.size() == g->numInputs())
      (void)checkIndexInputs(*g, inputs, names);
  }
}

/// Every format: the fuzzer's inputs hold any of them.
std::string anyFormat(const std::string &) { return std::string(); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (Expected<Npy> npy = parseNpy(bytes))
    exerciseNpy(*npy);
  // A manifest: the text up to the first NUL; what follows feeds sizes and
  // index inputs.
  size_t end = bytes.find('\0');
  std::string text = bytes.substr(0, end);
  const uint8_t *extra = end == std::string::npos ? nullptr : data + end + 1;
  size_t n = end == std::string::npos ? 0 : size - end - 1;
  if (Expected<Manifest> m = Manifest::parse(text, "fuzz", anyFormat))
    exerciseManifest(*m, extra, n);
  return 0;
}
