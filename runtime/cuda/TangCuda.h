//===- TangCuda.h - Run tang CUDA bundles on the driver API -----*- C++ -*-===//
//
// A small library over the CUDA driver API that loads a tang CUDA bundle
// (docs/Bundle.md: manifest.json plus a PTX or cubin image) and runs the
// launch sequence of its functions.
//
// The driver (libcuda.so.1) is loaded with dlopen on first use, so this
// library links without it and a machine without a driver or a GPU gets one
// clear error ("no CUDA driver (libcuda.so.1 not found)", "no CUDA device")
// instead of a loader failure. Setting TANG_LIBCUDA to a path loads that
// library instead (a driver in a non-standard place, or a test double).
//
// Nothing throws (LLVM-style builds use -fno-exceptions): every fallible call
// returns an `Error` or an `Expected<T>`.
//
// Objects (Module, Buffer, Timer, Bundle) belong to the context that was
// current when they were made; destroy them before their Context.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_RUNTIME_CUDA_TANGCUDA_H
#define TANG_RUNTIME_CUDA_TANGCUDA_H

#include "Error.h"
#include "Manifest.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tang::cuda {

// The Error, Expected and manifest types live in runtime/common (shared with
// runtime/vulkan) and are used here under their tang::cuda names.
using runtime::BufferSpec;
using runtime::Dim3;
using runtime::DType;
using runtime::dtypeBytes;
using runtime::dtypeName;
using runtime::Error;
using runtime::Expected;
using runtime::FunctionSpec;
using runtime::LaunchArg;
using runtime::LaunchSpec;
using runtime::Manifest;
using runtime::parseDType;

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

/// Whether the CUDA driver loads, initializes and sees at least one device.
/// When not, and `reason` is given, says why ("no CUDA driver (libcuda.so.1
/// not found)", "no CUDA device", ...).
bool available(std::string *reason = nullptr);

/// The driver's CUDA version, e.g. 13000 for 13.0.
Expected<int> driverVersion();

/// The number of CUDA devices (an error when there is no driver).
Expected<int> deviceCount();

/// A driver status as text: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
/// Needs the driver loaded; without it, the number.
std::string resultString(CUresult result);

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

/// The primary context of one device, retained and made current on the
/// creating thread; released on destruction. PyTorch and the CUDA runtime use
/// this same context, so buffers are shared with them freely.
class Context {
public:
  /// Initializes the driver and retains device `ordinal`'s primary context.
  static Expected<Context> create(int ordinal = 0);

  Context(Context &&other) noexcept;
  Context &operator=(Context &&other) noexcept;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context();

  /// Makes this context current on the calling thread.
  Error makeCurrent() const;
  /// Waits for all work in this context; reports asynchronous faults.
  Error synchronize() const;

  /// The device ordinal.
  int ordinal() const { return ord; }
  /// The driver's device handle.
  CUdevice device() const { return dev; }
  /// The driver's context handle.
  CUcontext get() const { return ctx; }
  /// The device's name, e.g. "NVIDIA H200".
  std::string deviceName() const;
  /// The compute capability, e.g. {9, 0}.
  std::pair<int, int> computeCapability() const;

private:
  Context(int ordinal, CUdevice device, CUcontext context)
      : ord(ordinal), dev(device), ctx(context) {}

  int ord = -1;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
};

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// A loaded PTX or cubin image (cuModuleLoadDataEx), in the current context.
class Module {
public:
  /// Loads an image from memory: PTX text or a cubin. `name` labels errors.
  /// On a JIT failure the error carries the JIT's error log.
  static Expected<Module> loadData(const std::string &image,
                                   const std::string &name = "image");
  /// Loads the PTX or cubin file at `path`.
  static Expected<Module> loadFile(const std::string &path);

  Module() = default;
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  /// The kernel called `name`.
  Expected<CUfunction> function(const std::string &name) const;
  /// The driver's module handle.
  CUmodule get() const { return mod; }
  /// What the JIT said while loading (often empty).
  const std::string &infoLog() const { return info; }

private:
  CUmodule mod = nullptr;
  std::string label;
  std::string info;
};

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

/// A device allocation (cuMemAlloc) in the current context. A zero-byte
/// buffer allocates nothing and has the null pointer.
class Buffer {
public:
  /// Allocates `bytes` bytes of device memory (uninitialized).
  static Expected<Buffer> allocate(size_t bytes);

  Buffer() = default;
  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer();

  /// The device address.
  CUdeviceptr ptr() const { return dptr; }
  /// The size in bytes.
  size_t size() const { return bytes; }
  /// Copies `n` bytes from `host` to the buffer at `offset` (synchronous).
  Error upload(const void *host, size_t n, size_t offset = 0);
  /// Copies `n` bytes at `offset` of the buffer to `host` (synchronous).
  Error download(void *host, size_t n, size_t offset = 0) const;
  /// Sets every byte to `value` (e.g. 0xff to poison an output).
  Error fill(uint8_t value);

private:
  CUdeviceptr dptr = 0;
  size_t bytes = 0;
};

//===----------------------------------------------------------------------===//
// Launches and timing
//===----------------------------------------------------------------------===//

/// Launches `function` on `stream` with `sharedBytes` bytes of dynamic shared
/// memory; `params` holds one pointer to each kernel parameter's value. Over
/// 48 KiB of shared memory needs setMaxDynamicSharedBytes first. Reports
/// launch-configuration errors; faults in the kernel surface at the next
/// synchronization.
Error launch(CUfunction function, Dim3 grid, Dim3 block, unsigned sharedBytes,
             void **params, CUstream stream = nullptr);

/// Lets `function` use up to `bytes` bytes of dynamic shared memory.
Error setMaxDynamicSharedBytes(CUfunction function, unsigned bytes);

/// The tensor map `map` over the buffer `buffer` at device address `base`
/// (cuTensorMapEncodeTiled: zero fill out of bounds, 256-byte L2
/// promotion, no interleave), for a kernel parameter passed by value.
Expected<CUtensorMap> encodeTensorMap(CUdeviceptr base,
                                      const tang::runtime::BufferSpec &buffer,
                                      const tang::runtime::TensorMapSpec &map);

/// Times device work with two events (cuEventRecord / cuEventElapsedTime).
class Timer {
public:
  /// Creates the two events in the current context.
  static Expected<Timer> create();

  Timer() = default;
  Timer(Timer &&other) noexcept;
  Timer &operator=(Timer &&other) noexcept;
  Timer(const Timer &) = delete;
  Timer &operator=(const Timer &) = delete;
  ~Timer();

  /// Records the start event on `stream`.
  Error start(CUstream stream = nullptr);
  /// Records the stop event on `stream`.
  Error stop(CUstream stream = nullptr);
  /// Waits for the stop event; the milliseconds from start to stop.
  Expected<float> elapsedMs() const;

private:
  CUevent begin = nullptr, end = nullptr;
};

//===----------------------------------------------------------------------===//
// Bundle
//===----------------------------------------------------------------------===//

/// A loaded bundle: its manifest, its module and every kernel the manifest
/// names (resolved at load, so a missing kernel is a load error).
/// Temporaries are allocated on a function's first run and reused, so one
/// bundle must not run the same function on two streams at once.
class Bundle {
public:
  /// Loads DIR/manifest.json and the image it names into `context`.
  static Expected<Bundle> load(const Context &context, const std::string &dir);
  /// Loads the image of an already parsed `manifest` from `dir`.
  static Expected<Bundle> load(const Context &context, const std::string &dir,
                               Manifest manifest);

  /// The manifest.
  const Manifest &manifest() const { return man; }
  /// The module holding the kernels.
  const Module &module() const { return mod; }

  /// Enqueues function `name`'s launch sequence on `stream`. `args` holds one
  /// device pointer per function argument, in manifest order, each buffer
  /// dense and as large as the manifest says. Does not wait for the kernels.
  Error run(const std::string &name, const std::vector<CUdeviceptr> &args,
            CUstream stream = nullptr);

private:
  /// A function's kernels and (once run) its temporaries.
  struct Loaded {
    std::vector<CUfunction> kernels;
    std::vector<Buffer> temporaries;
    bool allocated = false;
  };

  Bundle() = default;

  Manifest man;
  Module mod;
  std::vector<Loaded> loaded;
};

} // namespace tang::cuda

#endif // TANG_RUNTIME_CUDA_TANGCUDA_H
