//===- tang-cuda-run.cpp - Run a function of a tang CUDA bundle -*- C++ -*-===//
//
// tang-cuda-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR] [--repeat N]
//
// Loads the bundle, reads one .npy file per input argument (checking shape
// and dtype against the manifest), runs the function once on the GPU with
// every output poisoned beforehand (0xff bytes: NaN for floats), prints a
// summary of each output, and optionally writes DIR/output_<k>.npy (output
// #k in argument order) and times N more runs with CUDA events.
//
// .npy dtypes: f64 <f8, f32 <f4, f16 <f2, bf16 as its bit patterns <u2 (or
// <i2), i32 <i4, i8 |i1, i1 |b1 (or |u1, |i1).
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "TangCuda.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

using namespace tang::cuda;
using namespace tang::runtime;

namespace {

/// The command line.
struct Options {
  std::string bundleDir;
  std::string function;
  std::vector<std::string> inputs;
  std::map<unsigned, int64_t> sizes;
  std::string outDir;
  int repeat = 0;
  int warmup = 3;
  int device = 0;
};

const char *const kUsage =
    "usage: tang-cuda-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [options]\n"
    "\n"
    "Runs FUNCTION of the tang CUDA bundle in BUNDLE_DIR (manifest.json plus\n"
    "its PTX or cubin image) on the GPU, with one .npy file per input\n"
    "argument, in manifest order.\n"
    "\n"
    "options:\n"
    "  --out DIR     write output #k to DIR/output_<k>.npy (bf16 as uint16)\n"
    "  --repeat N    then time N more runs with CUDA events (median, min, "
    "max)\n"
    "  --warmup N    untimed runs before the timed ones (default 3)\n"
    "  --device N    the CUDA device ordinal (default 0)\n"
    "  --size argK=N the value of the index argument #K (a size)\n"
    "  -h, --help    this text\n";

/// Parses a non-negative decimal integer.
bool parseCount(const char *text, int &out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || !*text || *end || v < 0 || v > 1000000000)
    return false;
  out = int(v);
  return true;
}

/// Parses argv; returns 0 to go on, else the exit code.
int parseOptions(int argc, char **argv, Options &o) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return -1;
    }
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tang-cuda-run: %s needs a value\n%s", name,
                     kUsage);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--out") {
      const char *v = value("--out");
      if (!v)
        return 2;
      o.outDir = v;
    } else if (a == "--repeat" || a == "--warmup" || a == "--device") {
      const char *v = value(a.c_str());
      if (!v)
        return 2;
      int &target = a == "--repeat"   ? o.repeat
                    : a == "--warmup" ? o.warmup
                                      : o.device;
      if (!parseCount(v, target)) {
        std::fprintf(stderr, "tang-cuda-run: %s wants a count, got '%s'\n",
                     a.c_str(), v);
        return 2;
      }
    } else if (a == "--size") {
      const char *v = value("--size");
      if (!v)
        return 2;
      if (Error e = parseSizeArg(v, o.sizes)) {
        std::fprintf(stderr, "tang-cuda-run: %s\n", e.message().c_str());
        return 2;
      }
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "tang-cuda-run: unknown option '%s'\n%s", a.c_str(),
                   kUsage);
      return 2;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  o.bundleDir = positional[0];
  o.function = positional[1];
  o.inputs.assign(positional.begin() + 2, positional.end());
  return 0;
}

//===----------------------------------------------------------------------===//
// Summaries
//===----------------------------------------------------------------------===//

/// Element `i` of `data` (type `t`) as a double.
double element(const std::string &data, DType t, size_t i) {
  const char *p = data.data() + i * dtypeBytes(t);
  switch (t) {
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return tang::runtime::decodeHalf(v);
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I8:
    return static_cast<int8_t>(*p);
  case DType::I1:
    return static_cast<uint8_t>(*p);
  }
  return 0;
}

/// Prints one line about output #k (argument #arg).
void printSummary(size_t k, size_t arg, const BufferSpec &b,
                  const std::string &data) {
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t n = b.numElements(), finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = element(data, b.dtype, size_t(i));
    if (!std::isfinite(v))
      continue;
    ++finite;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  std::printf("output #%zu (arg %zu): %s %s", k, arg, dtypeName(b.dtype),
              npyShapeString(b.shape).c_str());
  if (finite)
    std::printf(": min %.6g, max %.6g, mean %.6g", mn, mx,
                sum / double(finite));
  if (finite != n)
    std::printf(" [%lld non-finite of %lld]", (long long)(n - finite),
                (long long)n);
  std::printf("\n");
}

/// Runs everything; returns the exit code.
int runMain(const Options &o) {
  auto fail = [](const Error &e) {
    std::fprintf(stderr, "tang-cuda-run: error: %s\n", e.message().c_str());
    return 1;
  };

  // Everything that needs no GPU first: the manifest and the inputs.
  Expected<Manifest> manifest =
      Manifest::loadFile(o.bundleDir + "/manifest.json");
  if (!manifest)
    return fail(manifest.error());
  const FunctionSpec *f = manifest->find(o.function);
  if (!f)
    return fail(Error::failure("no function '" + o.function +
                               "' in the bundle (it has " +
                               manifest->functionNames() + ")"));
  if (o.inputs.size() != f->numInputs())
    return fail(Error::failure(
        "function '" + f->name + "' has " + std::to_string(f->numInputs()) +
        " inputs, got " + std::to_string(o.inputs.size()) + " .npy files"));
  std::vector<Npy> npys;
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string &path : o.inputs) {
    Expected<Npy> npy = readNpy(path);
    if (!npy)
      return fail(npy.error());
    shapes.push_back(npy->shape);
    npys.push_back(std::move(*npy));
  }
  // The function at the sizes its inputs and --size give: the bundle is
  // loaded with that function alone.
  Expected<FunctionSpec> instance = f->instantiate(shapes, o.sizes);
  if (!instance)
    return fail(instance.error());
  manifest->functions = {std::move(*instance)};
  f = &manifest->functions[0];
  std::vector<Npy> inputs;
  for (size_t i = 0, k = 0; i < f->args.size(); ++i) {
    const BufferSpec &b = f->args[i];
    if (b.role != BufferSpec::Role::Input)
      continue;
    const std::string &path = o.inputs[k];
    Npy *npy = &npys[k++];
    if (npy->shape != b.shape)
      return fail(Error::failure(path + ": shape " +
                                 npyShapeString(npy->shape) + ", but arg #" +
                                 std::to_string(i) + " of '" + f->name +
                                 "' is " + npyShapeString(b.shape)));
    if (!npyAccepts(b.dtype, npy->descr))
      return fail(Error::failure(path + ": dtype '" + npy->descr +
                                 "', but arg #" + std::to_string(i) + " of '" +
                                 f->name + "' is " + dtypeName(b.dtype) +
                                 " (wants '" + npyDescr(b.dtype) + "')"));
    inputs.push_back(std::move(*npy));
  }
  if (Error e = checkIndexInputs(*f, inputs, o.inputs))
    return fail(e);

  Expected<Context> ctx = Context::create(o.device);
  if (!ctx)
    return fail(ctx.error());
  Expected<int> version = driverVersion();
  auto [major, minor] = ctx->computeCapability();
  std::printf("device %d: %s (sm_%d%d), driver %d.%d; bundle chip %s\n",
              o.device, ctx->deviceName().c_str(), major, minor,
              version ? *version / 1000 : 0,
              version ? (*version % 1000) / 10 : 0, manifest->chip.c_str());
  Expected<Bundle> bundle = Bundle::load(*ctx, o.bundleDir, *manifest);
  if (!bundle)
    return fail(bundle.error());

  // Device buffers: inputs uploaded, outputs poisoned.
  std::vector<Buffer> buffers;
  std::vector<CUdeviceptr> ptrs;
  for (size_t i = 0, k = 0; i < f->args.size(); ++i) {
    const BufferSpec &b = f->args[i];
    // An output updated in place is its input's buffer.
    if (b.aliasOf >= 0) {
      ptrs.push_back(ptrs[size_t(b.aliasOf)]);
      buffers.emplace_back();
      continue;
    }
    Expected<Buffer> buf = Buffer::allocate(b.numBytes());
    if (!buf)
      return fail(buf.error());
    Error e = b.role == BufferSpec::Role::Input
                  ? buf->upload(inputs[k].data.data(), inputs[k].data.size())
                  : buf->fill(0xff);
    k += b.role == BufferSpec::Role::Input;
    if (e)
      return fail(e);
    ptrs.push_back(buf->ptr());
    buffers.push_back(std::move(*buf));
  }

  if (Error e = bundle->run(f->name, ptrs))
    return fail(e);
  if (Error e = ctx->synchronize())
    return fail(std::move(e).withContext("running '" + f->name + "'"));

  if (!o.outDir.empty())
    if (Error e = makeDirs(o.outDir))
      return fail(e);
  for (size_t i = 0, k = 0; i < f->args.size(); ++i) {
    const BufferSpec &b = f->args[i];
    if (b.role != BufferSpec::Role::Output)
      continue;
    std::string data(b.numBytes(), '\0');
    size_t from = b.aliasOf >= 0 ? size_t(b.aliasOf) : i;
    if (Error e = buffers[from].download(data.data(), data.size()))
      return fail(e);
    printSummary(k, i, b, data);
    if (!o.outDir.empty()) {
      std::string path = o.outDir + "/output_" + std::to_string(k) + ".npy";
      if (Error e = writeNpy(path, b.dtype, b.shape, data))
        return fail(e);
    }
    ++k;
  }

  if (o.repeat > 0) {
    for (int i = 0; i < o.warmup; ++i)
      if (Error e = bundle->run(f->name, ptrs))
        return fail(e);
    Expected<Timer> timer = Timer::create();
    if (!timer)
      return fail(timer.error());
    std::vector<float> times;
    for (int i = 0; i < o.repeat; ++i) {
      if (Error e = timer->start())
        return fail(e);
      if (Error e = bundle->run(f->name, ptrs))
        return fail(e);
      if (Error e = timer->stop())
        return fail(e);
      Expected<float> ms = timer->elapsedMs();
      if (!ms)
        return fail(ms.error());
      times.push_back(*ms);
    }
    if (Error e = ctx->synchronize())
      return fail(e);
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median =
        n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    std::printf("time of '%s' over %zu runs (%zu launches each): median "
                "%.4f ms, min %.4f ms, max %.4f ms\n",
                f->name.c_str(), n, f->launches.size(), median, times.front(),
                times.back());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, o))
    return rc < 0 ? 0 : rc;
  return runMain(o);
}
