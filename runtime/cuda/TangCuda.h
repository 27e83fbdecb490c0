//===- TangCuda.h - Run tang CUDA bundles on the driver API -----*- C++ -*-===//
//
// A small library over the CUDA driver API that loads a tang CUDA bundle
// (docs/CudaBundle.md: manifest.json plus a PTX or cubin image) and runs the
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

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tang::cuda {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The outcome of a fallible call: success, or a failure with a message.
/// Like llvm::Error it is true on failure:
///   if (Error e = buffer.upload(data, n)) return e;
class [[nodiscard]] Error {
public:
  /// Success.
  Error() = default;
  /// Success.
  static Error success() { return Error(); }
  /// A failure saying `message` (an empty message reads "unknown error").
  static Error failure(std::string message);

  /// True on failure.
  explicit operator bool() const { return failed; }
  /// True on success.
  bool ok() const { return !failed; }
  /// What went wrong; empty on success.
  const std::string &message() const { return text; }
  /// This error with "`context`: " put in front of its message (success
  /// stays success).
  Error withContext(const std::string &context) &&;

private:
  bool failed = false;
  std::string text;
};

/// A value of type T, or the Error that prevented it. Like llvm::Expected it
/// is true when it holds a value.
template <typename T>
class [[nodiscard]] Expected {
public:
  /// Holds `value`.
  Expected(T &&value) : value(std::move(value)) {}
  /// Holds a copy of `value`.
  Expected(const T &value) : value(value) {}
  /// Holds `error`, which must be a failure.
  Expected(Error error) : err(std::move(error)) {
    if (!err)
      err = Error::failure("internal error: Expected built from success");
  }

  /// True when a value is held.
  explicit operator bool() const { return value.has_value(); }
  /// The value; only when one is held.
  T &operator*() { return *value; }
  /// The value; only when one is held.
  const T &operator*() const { return *value; }
  /// The value; only when one is held.
  T *operator->() { return &*value; }
  /// The value; only when one is held.
  const T *operator->() const { return &*value; }
  /// The error (success when a value is held).
  const Error &error() const { return err; }
  /// Moves the error out (success when a value is held).
  Error takeError() { return std::move(err); }

private:
  std::optional<T> value;
  Error err;
};

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

/// A grid or block size.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

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
// The bundle manifest
//===----------------------------------------------------------------------===//

/// An element type of a bundle buffer.
enum class DType { F64, F32, F16, BF16, I32, I8, I1 };

/// The manifest spelling of `type` ("f32", "bf16", ...).
const char *dtypeName(DType type);
/// Bytes per element (i1 takes one byte).
size_t dtypeBytes(DType type);
/// The type spelled `name`, if any.
std::optional<DType> parseDType(const std::string &name);

/// One buffer of a function: an argument or a temporary.
struct BufferSpec {
  /// What the buffer is for.
  enum class Role { Input, Output, Temporary };
  Role role = Role::Input;
  /// Dense row-major shape; empty for a scalar.
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  /// The number of elements (1 for a scalar).
  int64_t numElements() const;
  /// The size in bytes.
  size_t numBytes() const { return numElements() * dtypeBytes(dtype); }
};

/// One kernel parameter of a launch: argument or temporary #index.
struct LaunchArg {
  bool isTemporary = false;
  unsigned index = 0;
};

/// One kernel launch of a function's sequence.
struct LaunchSpec {
  std::string kernel;
  Dim3 grid, block;
  unsigned sharedBytes = 0;
  /// One device pointer per kernel parameter, in order.
  std::vector<LaunchArg> args;
};

/// A host function: its buffers and its launch sequence.
struct FunctionSpec {
  std::string name;
  /// The function's buffers, in order (inputs and outputs).
  std::vector<BufferSpec> args;
  /// Device buffers the sequence needs (no initial value).
  std::vector<BufferSpec> temporaries;
  std::vector<LaunchSpec> launches;

  /// The number of input arguments.
  size_t numInputs() const;
  /// The number of output arguments.
  size_t numOutputs() const { return args.size() - numInputs(); }
};

/// A parsed and validated manifest.json (format version 1).
struct Manifest {
  int version = 1;
  /// "ptx" or "cubin".
  std::string format;
  /// The image file, relative to the bundle directory.
  std::string image;
  /// The target chip, e.g. "sm_90a".
  std::string chip;
  std::vector<FunctionSpec> functions;

  /// Parses and validates manifest text; `where` names it in errors.
  static Expected<Manifest> parse(const std::string &json,
                                  const std::string &where = "manifest.json");
  /// Reads, parses and validates the manifest at `path`.
  static Expected<Manifest> loadFile(const std::string &path);

  /// The function called `name`, or null.
  const FunctionSpec *find(const std::string &name) const;
  /// The function names, comma-separated (for error messages).
  std::string functionNames() const;
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
