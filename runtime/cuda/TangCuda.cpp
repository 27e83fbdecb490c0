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

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

using namespace tang::cuda;
using tang::runtime::readFile;

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
  /// cuTensorMapEncodeTiled (CUDA 12+); null on older drivers, which then
  /// run only bundles without tensor maps.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

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
  d.tensorMapEncodeTiled = reinterpret_cast<decltype(d.tensorMapEncodeTiled)>(
      dlsym(handle, "cuTensorMapEncodeTiled"));
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

Expected<CUtensorMap>
tang::cuda::encodeTensorMap(CUdeviceptr base,
                            const tang::runtime::BufferSpec &buffer,
                            const tang::runtime::TensorMapSpec &map) {
  using tang::runtime::DType;
  if (Error e = requireDriver())
    return e;
  if (!driver().tensorMapEncodeTiled)
    return Error::failure("the bundle passes tensor maps (bulk tensor "
                          "copies), and the CUDA driver lacks "
                          "cuTensorMapEncodeTiled (CUDA 12 or newer needed)");
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  switch (buffer.dtype) {
  case DType::F64:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    break;
  case DType::F32:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  case DType::F16:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case DType::BF16:
    type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    break;
  case DType::I32:
    type = CU_TENSOR_MAP_DATA_TYPE_INT32;
    break;
  case DType::I8:
  case DType::I1:
    break;
  }
  // Innermost first: extents, strides of the outer dimensions in bytes.
  size_t rank = buffer.shape.size();
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  cuuint64_t stride = tang::runtime::dtypeBytes(buffer.dtype);
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;
    dims[i] = cuuint64_t(buffer.shape[d]);
    box[i] = cuuint32_t(map.box[d]);
    elementStrides[i] = 1;
    stride *= dims[i];
    if (i + 1 < rank)
      strides[i] = stride;
  }
  CUtensorMapSwizzle swizzle = map.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                               : map.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : map.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                   : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMap out;
  CUresult r = driver().tensorMapEncodeTiled(
      &out, type, cuuint32_t(rank), reinterpret_cast<void *>(base), dims,
      strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r == CUDA_SUCCESS)
    return out;
  std::string shape, boxText;
  for (size_t d = 0; d < rank; ++d) {
    shape += (d ? "x" : "") + std::to_string(buffer.shape[d]);
    boxText += (d ? "x" : "") + std::to_string(map.box[d]);
  }
  return Error::failure("cuTensorMapEncodeTiled (buffer " + shape + " " +
                        tang::runtime::dtypeName(buffer.dtype) + ", box " +
                        boxText + ", swizzle " + std::to_string(map.swizzle) +
                        ") failed: " + resultString(r));
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
      // Over 48 KiB of shared memory, static and dynamic together, must be
      // allowed explicitly: allowed for every dynamic size (the kernels'
      // few static bytes could tip a launch of exactly 48 KiB over).
      unsigned &limit = sharedSet[it->second];
      if (launchSpec.sharedBytes > limit) {
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
  if (f->isSymbolic())
    return Error::failure("function '" + name +
                          "' has symbolic sizes: load the bundle with it "
                          "resolved (FunctionSpec::instantiate)");
  if (args.size() != f->args.size())
    return Error::failure("function '" + name + "' takes " +
                          std::to_string(f->args.size()) + " buffers, got " +
                          std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i] && f->args[i].numBytes())
      return Error::failure("function '" + name + "': buffer #" +
                            std::to_string(i) + " is null");
  // Kernels access buffers 16 bytes at a time (vector loads and stores,
  // bulk tensor copies).
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] % 16 && f->args[i].numBytes())
      return Error::failure("function '" + name + "': buffer #" +
                            std::to_string(i) +
                            " is not 16-byte aligned (a view at an offset? "
                            "pass a copy)");
  Loaded &l = loaded[f - man.functions.data()];
  if (!l.allocated) {
    for (const BufferSpec &t : f->temporaries) {
      Expected<Buffer> buf = Buffer::allocate(t.numBytes());
      if (!buf)
        return buf.takeError().withContext("function '" + name +
                                           "': temporary");
      if (!t.init.empty())
        if (Error e = buf->upload(t.init.data(), t.numBytes()))
          return std::move(e).withContext("function '" + name + "': sizes");
      l.temporaries.push_back(std::move(*buf));
    }
    l.allocated = true;
  }
  std::vector<CUdeviceptr> values;
  std::vector<CUtensorMap> maps;
  std::vector<void *> params;
  for (size_t i = 0; i < f->launches.size(); ++i) {
    const LaunchSpec &launchSpec = f->launches[i];
    auto context = [&] {
      return "function '" + name + "', launch #" + std::to_string(i) + " (" +
             launchSpec.kernel + ")";
    };
    values.clear();
    maps.clear();
    // Reserved: params point into both vectors.
    values.reserve(launchSpec.args.size());
    maps.reserve(launchSpec.args.size());
    params.clear();
    for (const LaunchArg &a : launchSpec.args) {
      CUdeviceptr ptr =
          a.isTemporary ? l.temporaries[a.index].ptr() : args[a.index];
      if (!a.tensorMap) {
        values.push_back(ptr);
        params.push_back(&values.back());
        continue;
      }
      const BufferSpec &spec =
          a.isTemporary ? f->temporaries[a.index] : f->args[a.index];
      Expected<CUtensorMap> map = encodeTensorMap(ptr, spec, *a.tensorMap);
      if (!map)
        return map.takeError().withContext(context());
      maps.push_back(*map);
      params.push_back(&maps.back());
    }
    if (Error e = launch(l.kernels[i], launchSpec.grid, launchSpec.block,
                         launchSpec.sharedBytes, params.data(), stream))
      return std::move(e).withContext(context());
  }
  return Error::success();
}
