//===- tang-vk-run.cpp - Run a function of a tang SPIR-V bundle -*- C++ -*-===//
//
// tang-vk-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR] [--time N]
// tang-vk-run --probe
//
// Loads a bundle written by `tang-opt --tang-lower-spirv="bundle=DIR"`
// (manifest.json plus a Vulkan compute SPIR-V module, see
// docs/Bundle.md), reads one .npy file per input argument, runs the
// function's launches once on the first Vulkan device with a compute queue
// and writes output #k (in argument order) to DIR/output_<k>.npy: float
// outputs as float64, i32 outputs as int32, as tang-run writes them.
// With --time N it then runs the launches N more times and prints their
// median, least and greatest time from GPU timestamps written before the
// first launch and after the last. Buffers live in device-local memory the
// host can map where the device has such a type with room (resizable BAR;
// every memory of a CPU driver), else in host memory (said on the timing
// line: kernels then read over the bus).
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

#include "Manifest.h"
#include "Npy.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
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
// Manifest
//===----------------------------------------------------------------------===//

// The manifest (runtime/common/Manifest.h) is parsed and validated by the
// code shared with tang-cuda-run; this tool reads "spirv" bundles.
using tang::runtime::BufferSpec;
using tang::runtime::Dim3;
using tang::runtime::DType;
using tang::runtime::dtypeName;
using tang::runtime::FunctionSpec;
using tang::runtime::LaunchArg;
using tang::runtime::LaunchSpec;
using tang::runtime::Manifest;

/// Accepts "spirv", the format of --tang-lower-spirv bundles.
std::string checkSpirvFormat(const std::string &format) {
  if (format == "spirv")
    return "";
  return "\"" + format +
         "\" is not a Vulkan bundle (expected \"spirv\"; tang-cuda-run runs "
         "\"ptx\" and \"cubin\" bundles)";
}

/// A Failure (exit code 1) with the message of `error`.
Status toStatus(const tang::runtime::Error &error) {
  if (!error)
    return {};
  return Status::error(error.message());
}

/// Whether tang-vk-run can read and write buffers of `t`.
bool isSupportedIO(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 ||
         t == DType::I32;
}

/// The buffer a kernel parameter binds: an index into the function's
/// arguments followed by its temporaries.
size_t bufferIndex(const FunctionSpec &f, const LaunchArg &a) {
  return a.isTemporary ? f.args.size() + a.index : a.index;
}

/// The buffer holding argument `i`: an output updated in place is its
/// input's.
size_t argBuffer(const FunctionSpec &f, size_t i) {
  return f.args[i].aliasOf >= 0 ? size_t(f.args[i].aliasOf) : i;
}

/// The sizes of `d` as an array.
std::array<uint32_t, 3> sizes(const Dim3 &d) { return {d.x, d.y, d.z}; }

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

Status readFile(const std::string &path, std::string &out) {
  tang::runtime::Expected<std::string> text = tang::runtime::readFile(path);
  if (!text)
    return toStatus(text.error());
  out = std::move(*text);
  return {};
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

using tang::runtime::Npy;

/// Converts `npy` into `out`, the contents of a buffer of `b`.
Status convertInput(const Npy &npy, const BufferSpec &b,
                    const std::string &what, void *out) {
  return toStatus(tang::runtime::convertNpyInput(npy, b, what, out));
}

/// Writes buffer contents `data` of `b` to the .npy file at `path`.
Status writeNpy(const std::string &path, const BufferSpec &b,
                const void *data) {
  return toStatus(tang::runtime::writeBufferNpy(path, b, data));
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
  /// The module's SPIR-V version, as the header's word (0x00MMmm00).
  uint32_t version = 0;
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
  kCapCooperativeMatrixKHR = 6022,
};

/// VK_KHR_cooperative_matrix's feature structure (Vulkan 1.3.255; the
/// headers of Debian 12 are 1.3.239): the same layout, spelled here.
constexpr VkStructureType kCooperativeMatrixFeaturesKHR =
    VkStructureType(1000506000);
struct CooperativeMatrixFeaturesKHR {
  VkStructureType sType = kCooperativeMatrixFeaturesKHR;
  void *pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
constexpr const char *kCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
/// The subgroup size tang's cooperative-matrix kernels are written for
/// (one 32-thread subgroup per workgroup, --convert-tang-to-gpu's
/// subgroup-size of the SPIR-V pipeline).
constexpr uint32_t kMatrixSubgroupSize = 32;

Status inspectSpirv(const std::vector<uint32_t> &words, const std::string &path,
                    SpirvInfo &info) {
  if (words.size() < 5 || words[0] != kSpirvMagic)
    return Status::error(path + ": not a SPIR-V module (bad magic number)");
  info.version = words[1];
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
Status checkEntryPoints(const FunctionSpec &f, const SpirvInfo &info) {
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const LaunchSpec &l = f.launches[i];
    std::string what = "launch #" + std::to_string(i) + " (" + l.kernel + ")";
    auto ep = info.entryPoints.find(l.kernel);
    if (ep == info.entryPoints.end())
      return Status::error(what +
                           ": the SPIR-V module has no GLCompute entry point "
                           "named \"" +
                           l.kernel + "\"");
    const std::vector<uint32_t> &local = ep->second;
    if (local[0] && (local[0] != l.block.x || local[1] != l.block.y ||
                     local[2] != l.block.z))
      return Status::error(
          what + ": the manifest's block [" + std::to_string(l.block.x) + ", " +
          std::to_string(l.block.y) + ", " + std::to_string(l.block.z) +
          "] differs from the entry point's " + "LocalSize " +
          std::to_string(local[0]) + " " + std::to_string(local[1]) + " " +
          std::to_string(local[2]));
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
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkEnumerateDeviceExtensionProperties)                                      \
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
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkQueueSubmit)                                                             \
  X(vkWaitForFences)                                                           \
  X(vkResetFences)                                                             \
  X(vkCreateQueryPool)                                                         \
  X(vkDestroyQueryPool)                                                        \
  X(vkCmdResetQueryPool)                                                       \
  X(vkCmdWriteTimestamp)                                                       \
  X(vkGetQueryPoolResults)

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

/// A buffer the kernels use, in device-local memory where the device has
/// it, and its staging buffer in host-visible memory (cached where the
/// device offers it), mapped for the whole run: the host writes and reads
/// the staging buffer, and copies on the queue move the data (a GPU's
/// device memory read through its PCIe window runs at a few MB/s).
struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory stagingMemory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void *mapped = nullptr;
  /// Whether the kernels' memory is device-local.
  bool deviceLocal = false;
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
  /// With `timeRuns`, the launches then run that many times more, timed
  /// by GPU timestamps (the median, least and greatest are printed).
  Status run(const FunctionSpec &f, const std::vector<uint32_t> &spirv,
             const SpirvInfo &info, const std::vector<std::string> &inputs,
             const std::string &outDir, int timeRuns = 0);

  const std::string &deviceName() const { return devName; }
  /// What the device offers the kernels: subgroup size, cooperative
  /// matrices (--probe -v).
  std::string describe();

private:
  VulkanApi vk;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  /// The valid bits of the queue's timestamps (0: it has none).
  uint32_t timestampBits = 0;
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
  VkQueryPool queryPool = VK_NULL_HANDLE;

  Status loadLoader();
  /// Runs the recorded command buffer `times` more times and prints the
  /// timestamps' median, least and greatest.
  Status time(VkCommandBuffer cmd, int times);
  Status createDevice(const SpirvInfo &info);
  bool hasDeviceExtension(const char *name);
  uint32_t subgroupSize();
  Status createBuffer(size_t bytes, DeviceBuffer &b);
  /// Allocates and binds memory for `buffer` of the first type that has
  /// one of `preferred` (in order) and room; `got` its properties.
  Status allocate(VkBuffer buffer,
                  std::initializer_list<VkMemoryPropertyFlags> preferred,
                  VkDeviceMemory &memory, VkMemoryPropertyFlags &got);
  Status checkLimits(const FunctionSpec &f);
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
  // 1.3: SPIR-V 1.6 modules (cooperative matrices); a 1.2 device still
  // runs 1.5 modules under it.
  app.apiVersion = VK_API_VERSION_1_3;
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
        timestampBits = families[q].timestampValidBits;
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

bool Runner::hasDeviceExtension(const char *name) {
  uint32_t n = 0;
  vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, exts.data());
  for (const VkExtensionProperties &e : exts)
    if (std::strcmp(e.extensionName, name) == 0)
      return true;
  return false;
}

uint32_t Runner::subgroupSize() {
  if (props.apiVersion < VK_API_VERSION_1_1)
    return 1;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &subgroup;
  vk.vkGetPhysicalDeviceProperties2(physical, &props2);
  return subgroup.subgroupSize;
}

std::string Runner::describe() {
  return "subgroup size " + std::to_string(subgroupSize()) +
         "; cooperative matrices (" + kCooperativeMatrixExtension + "): " +
         (hasDeviceExtension(kCooperativeMatrixExtension) ? "yes" : "no");
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
  case kCapCooperativeMatrixKHR:
    return "CooperativeMatrixKHR";
  }
  return "?";
}

Status Runner::createDevice(const SpirvInfo &info) {
  // Query the optional features the module's capabilities need, through the
  // Features2 chain (core in Vulkan 1.1 and 1.2), and enable exactly those.
  bool has11 = props.apiVersion >= VK_API_VERSION_1_1;
  bool has12 = props.apiVersion >= VK_API_VERSION_1_2;
  uint32_t major = info.version >> 16 & 0xff, minor = info.version >> 8 & 0xff;
  if ((major > 1 || (major == 1 && minor >= 6)) &&
      props.apiVersion < VK_API_VERSION_1_3)
    return Status::error(
        "the module is SPIR-V " + std::to_string(major) + "." +
        std::to_string(minor) +
        ", which needs "
        "Vulkan 1.3; \"" +
        devName + "\" has " +
        std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
        std::to_string(VK_API_VERSION_MINOR(props.apiVersion)));
  // Cooperative matrices: the extension, its feature, and subgroups of the
  // size the kernels are written for.
  bool matrices = info.capabilities.count(kCapCooperativeMatrixKHR);
  std::vector<const char *> extensions;
  CooperativeMatrixFeaturesKHR matrixFeatures, wantMatrix;
  if (matrices) {
    if (!hasDeviceExtension(kCooperativeMatrixExtension))
      return Status::error("the SPIR-V module uses cooperative matrices "
                           "(CooperativeMatrixKHR), but \"" +
                           devName + "\" does not have " +
                           kCooperativeMatrixExtension +
                           " (lower without --tang-lower-spirv's "
                           "matrix-units)");
    if (uint32_t size = subgroupSize(); size != kMatrixSubgroupSize)
      return Status::error(
          "the cooperative-matrix kernels are written for subgroups of " +
          std::to_string(kMatrixSubgroupSize) + " threads; \"" + devName +
          "\" has " + std::to_string(size));
    extensions.push_back(kCooperativeMatrixExtension);
  }
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
  // Cooperative matrices need Vulkan 1.3 (checked above): first in the
  // chain.
  matrixFeatures.pNext = &storage16;
  if (has11) {
    supported.pNext =
        matrices ? static_cast<void *>(&matrixFeatures) : &storage16;
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
  wantMatrix.pNext = &want16;
  VkPhysicalDeviceFeatures2 want{};
  want.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  want.pNext = !has11     ? nullptr
               : matrices ? static_cast<void *>(&wantMatrix)
                          : &want16;

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
    case kCapCooperativeMatrixKHR:
      have = &matrixFeatures.cooperativeMatrix;
      enable = &wantMatrix.cooperativeMatrix;
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
  dci.enabledExtensionCount = uint32_t(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
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

Status Runner::allocate(VkBuffer buffer,
                        std::initializer_list<VkMemoryPropertyFlags> preferred,
                        VkDeviceMemory &memory, VkMemoryPropertyFlags &got) {
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(device, buffer, &req);
  // The first type with each set of properties in turn; a full heap (a
  // small BAR window) moves on to the next type.
  VkResult allocated = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  bool found = false;
  for (VkMemoryPropertyFlags flags : preferred) {
    for (uint32_t i = 0; i < memProps.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags has = memProps.memoryTypes[i].propertyFlags;
      if (!(req.memoryTypeBits & (1u << i)) || (has & flags) != flags)
        continue;
      found = true;
      VkMemoryAllocateInfo mai{};
      mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
      mai.allocationSize = req.size;
      mai.memoryTypeIndex = i;
      allocated = vk.vkAllocateMemory(device, &mai, nullptr, &memory);
      if (allocated == VK_SUCCESS) {
        got = has;
        break;
      }
    }
    if (allocated == VK_SUCCESS)
      break;
  }
  if (!found)
    return Status::error("\"" + devName +
                         "\" has no suitable memory type for a buffer");
  TRY(check(allocated, "vkAllocateMemory"));
  VK_CALL(vkBindBufferMemory, device, buffer, memory, 0);
  return {};
}

Status Runner::createBuffer(size_t bytes, DeviceBuffer &b) {
  // Vulkan has no empty buffers: a zero-element tensor still gets 4 bytes.
  b.size = std::max<VkDeviceSize>(bytes, 4);
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = b.size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
              VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK_CALL(vkCreateBuffer, device, &bci, nullptr, &b.buffer);
  VkMemoryPropertyFlags got = 0;
  TRY(allocate(b.buffer, {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0}, b.memory,
               got));
  b.deviceLocal = got & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;

  bci.usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VK_CALL(vkCreateBuffer, device, &bci, nullptr, &b.staging);
  const VkMemoryPropertyFlags kVisible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  TRY(allocate(
      b.staging,
      {VkMemoryPropertyFlags(kVisible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT |
                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
       VkMemoryPropertyFlags(kVisible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT),
       VkMemoryPropertyFlags(kVisible | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
       kVisible},
      b.stagingMemory, got));
  VK_CALL(vkMapMemory, device, b.stagingMemory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  return {};
}

Status Runner::checkLimits(const FunctionSpec &f) {
  const VkPhysicalDeviceLimits &lim = props.limits;
  for (size_t i = 0; i < f.launches.size(); ++i) {
    const LaunchSpec &l = f.launches[i];
    std::string what = "launch #" + std::to_string(i) + " (" + l.kernel + ")";
    uint64_t invocations = uint64_t(l.block.x) * l.block.y * l.block.z;
    std::array<uint32_t, 3> grid = sizes(l.grid), block = sizes(l.block);
    for (int d = 0; d < 3; ++d) {
      if (grid[d] > lim.maxComputeWorkGroupCount[d])
        return Status::error(what + ": grid[" + std::to_string(d) +
                             "] = " + std::to_string(grid[d]) +
                             " exceeds the device's maxComputeWorkGroupCount " +
                             std::to_string(lim.maxComputeWorkGroupCount[d]));
      if (block[d] > lim.maxComputeWorkGroupSize[d])
        return Status::error(what + ": block[" + std::to_string(d) +
                             "] = " + std::to_string(block[d]) +
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
    if (l.args.size() > lim.maxPerStageDescriptorStorageBuffers)
      return Status::error(
          what + ": " + std::to_string(l.args.size()) +
          " buffer parameters exceed the device's " +
          std::to_string(lim.maxPerStageDescriptorStorageBuffers) +
          " storage buffers per stage");
  }
  auto checkSize = [&](const BufferSpec &b, const std::string &what) -> Status {
    if (b.numBytes() > lim.maxStorageBufferRange)
      return Status::error(what + " " + shapeString(b.shape) + " " +
                           dtypeName(b.dtype) + ": " +
                           std::to_string(b.numBytes()) +
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

Status Runner::run(const FunctionSpec &f, const std::vector<uint32_t> &spirv,
                   const SpirvInfo &info,
                   const std::vector<std::string> &inputs,
                   const std::string &outDir, int timeRuns) {
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
    if (b.aliasOf >= 0)
      continue; // Its input's buffer (argBuffer).
    TRY(createBuffer(b.numBytes(), buffers[i]));
    if (i < f.args.size() && b.role == BufferSpec::Role::Input) {
      const std::string &data = inputs[nextInput++];
      std::memcpy(buffers[i].mapped, data.data(), data.size());
    } else if (!b.init.empty()) {
      std::memcpy(buffers[i].mapped, b.init.data(), b.init.size());
    } else {
      std::memset(buffers[i].mapped, 0xff, b.numBytes());
    }
  }
  std::vector<VkMappedMemoryRange> ranges;
  for (const DeviceBuffer &b : buffers) {
    if (!b.stagingMemory)
      continue;
    VkMappedMemoryRange range{};
    range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    range.memory = b.stagingMemory;
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
  for (const LaunchSpec &l : f.launches)
    totalDescriptors += uint32_t(l.args.size());
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
    const LaunchSpec &l = f.launches[i];
    std::vector<VkDescriptorSetLayoutBinding> bindings(l.args.size());
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

    std::vector<VkDescriptorBufferInfo> infos(l.args.size());
    std::vector<VkWriteDescriptorSet> writes(l.args.size());
    for (uint32_t p = 0; p < l.args.size(); ++p) {
      size_t at = bufferIndex(f, l.args[p]);
      if (at < f.args.size())
        at = argBuffer(f, at);
      infos[p] = {buffers[at].buffer, 0, VK_WHOLE_SIZE};
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

  // The command buffers.
  VkCommandPoolCreateInfo cpoolci{};
  cpoolci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpoolci.queueFamilyIndex = queueFamily;
  VK_CALL(vkCreateCommandPool, device, &cpoolci, nullptr, &commandPool);
  VkCommandBufferAllocateInfo cbai{};
  cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cbai.commandPool = commandPool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  VkCommandBuffer cmd, timed = VK_NULL_HANDLE;
  VK_CALL(vkAllocateCommandBuffers, device, &cbai, &cmd);
  if (timeRuns) {
    if (!timestampBits || props.limits.timestampPeriod <= 0)
      return Status::error("\"" + devName +
                           "\" cannot time its compute queue (no "
                           "timestamps): run without --time");
    VK_CALL(vkAllocateCommandBuffers, device, &cbai, &timed);
    VkQueryPoolCreateInfo qpci{};
    qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = 2;
    VK_CALL(vkCreateQueryPool, device, &qpci, nullptr, &queryPool);
  }
  auto barrier = [&](VkCommandBuffer c, VkPipelineStageFlags from,
                     VkAccessFlags fromAccess, VkPipelineStageFlags to,
                     VkAccessFlags toAccess) {
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = fromAccess;
    mb.dstAccessMask = toAccess;
    vk.vkCmdPipelineBarrier(c, from, to, 0, 1, &mb, 0, nullptr, 0, nullptr);
  };
  // The launches in order, a compute->compute barrier between two.
  auto recordLaunches = [&](VkCommandBuffer c) {
    for (size_t i = 0; i < f.launches.size(); ++i) {
      const LaunchSpec &l = f.launches[i];
      if (i > 0)
        barrier(c, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      vk.vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines[i]);
      vk.vkCmdBindDescriptorSets(c, VK_PIPELINE_BIND_POINT_COMPUTE,
                                 pipelineLayouts[i], 0, 1, &sets[i], 0,
                                 nullptr);
      vk.vkCmdDispatch(c, l.grid.x, l.grid.y, l.grid.z);
    }
  };
  // The checked run: every buffer from its staging buffer, the launches,
  // the outputs back to theirs.
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CALL(vkBeginCommandBuffer, cmd, &begin);
  for (const DeviceBuffer &b : buffers) {
    if (!b.buffer)
      continue;
    VkBufferCopy region{0, 0, b.size};
    vk.vkCmdCopyBuffer(cmd, b.staging, b.buffer, 1, &region);
  }
  barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  recordLaunches(cmd);
  barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  for (size_t i = 0; i < f.args.size(); ++i) {
    if (f.args[i].role != BufferSpec::Role::Output)
      continue;
    const DeviceBuffer &b = buffers[argBuffer(f, i)];
    VkBufferCopy region{0, 0, b.size};
    vk.vkCmdCopyBuffer(cmd, b.buffer, b.staging, 1, &region);
  }
  // Make the copies visible to the host.
  barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  VK_CALL(vkEndCommandBuffer, cmd);
  // The timed runs: the launches alone between two timestamps, the
  // buffers as the checked run left them.
  if (timed) {
    VkCommandBufferBeginInfo again{};
    again.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    VK_CALL(vkBeginCommandBuffer, timed, &again);
    vk.vkCmdResetQueryPool(timed, queryPool, 0, 2);
    vk.vkCmdWriteTimestamp(timed, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queryPool,
                           0);
    recordLaunches(timed);
    vk.vkCmdWriteTimestamp(timed, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                           queryPool, 1);
    VK_CALL(vkEndCommandBuffer, timed);
  }

  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VK_CALL(vkCreateFence, device, &fci, nullptr, &fence);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  VK_CALL(vkQueueSubmit, queue, 1, &submit, fence);
  // Ten minutes by default (lavapipe runs kernels on the CPU; the fused
  // transformer block's point kernels take minutes there),
  // TANG_VK_TIMEOUT_S otherwise.
  uint64_t seconds = 600;
  if (const char *s = std::getenv("TANG_VK_TIMEOUT_S")) {
    char *end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (!*s || *end || v == 0)
      return Status::error(std::string("TANG_VK_TIMEOUT_S='") + s +
                           "' is not a positive number of seconds");
    seconds = v;
  }
  VkResult waited = vk.vkWaitForFences(device, 1, &fence, VK_TRUE,
                                       seconds * 1000 * 1000 * 1000);
  if (waited == VK_TIMEOUT)
    return Status::error("the launches did not finish within " +
                         std::to_string(seconds) +
                         " s (set TANG_VK_TIMEOUT_S for longer)");
  TRY(check(waited, "vkWaitForFences"));
  VK_CALL(vkInvalidateMappedMemoryRanges, device, uint32_t(ranges.size()),
          ranges.data());

  // Summarise and write the outputs.
  size_t k = 0;
  for (size_t i = 0; i < f.args.size(); ++i) {
    const BufferSpec &b = f.args[i];
    if (b.role != BufferSpec::Role::Output)
      continue;
    size_t n = size_t(b.numElements()), nans = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t e = 0; e < n; ++e) {
      const char *p =
          static_cast<const char *>(buffers[argBuffer(f, i)].mapped);
      double x;
      if (b.dtype == DType::F32) {
        float v;
        std::memcpy(&v, p + 4 * e, 4);
        x = v;
      } else if (b.dtype == DType::F64) {
        std::memcpy(&x, p + 8 * e, 8);
      } else if (b.dtype == DType::F16) {
        uint16_t v;
        std::memcpy(&v, p + 2 * e, 2);
        x = tang::runtime::decodeHalf(v);
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
                   buffers[argBuffer(f, i)].mapped));
    ++k;
  }
  return timeRuns ? time(timed, timeRuns) : Status();
}

Status Runner::time(VkCommandBuffer cmd, int times) {
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  uint64_t mask =
      timestampBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestampBits) - 1;
  std::vector<double> ms;
  for (int r = 0; r < times; ++r) {
    VK_CALL(vkResetFences, device, 1, &fence);
    VK_CALL(vkQueueSubmit, queue, 1, &submit, fence);
    VK_CALL(vkWaitForFences, device, 1, &fence, VK_TRUE, UINT64_MAX);
    uint64_t stamps[2];
    VK_CALL(vkGetQueryPoolResults, device, queryPool, 0, 2, sizeof stamps,
            stamps, sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    ms.push_back(double((stamps[1] - stamps[0]) & mask) *
                 props.limits.timestampPeriod * 1e-6);
  }
  std::sort(ms.begin(), ms.end());
  bool local =
      std::all_of(buffers.begin(), buffers.end(), [](const DeviceBuffer &b) {
        return !b.buffer || b.deviceLocal;
      });
  std::printf("  time: median %.4f ms, least %.4f, greatest %.4f over %d "
              "runs (GPU timestamps; buffers in %s memory)\n",
              ms[ms.size() / 2], ms.front(), ms.back(), times,
              local ? "device-local" : "host");
  return {};
}

void Runner::destroy() {
  if (device) {
    if (queryPool)
      vk.vkDestroyQueryPool(device, queryPool, nullptr);
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
        vk.vkUnmapMemory(device, b.stagingMemory);
      for (VkBuffer v : {b.buffer, b.staging})
        if (v)
          vk.vkDestroyBuffer(device, v, nullptr);
      for (VkDeviceMemory m : {b.memory, b.stagingMemory})
        if (m)
          vk.vkFreeMemory(device, m, nullptr);
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
    "usage: tang-vk-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--size argK=N]\n"
    "                   [--out DIR] [--time N]\n"
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
    "  --size argK=N  the value of the index argument #K (a size)\n"
    "  --time N    then run the launches N more times and print their\n"
    "              median, least and greatest time (GPU timestamps)\n"
    "  --probe     only find the device: print its name, exit 0, or 2 when\n"
    "              there is no Vulkan loader, driver or device\n"
    "  -v          print the device used (with --probe: also its subgroup\n"
    "              size and whether it has cooperative matrices)\n"
    "  -h, --help  this text\n"
    "\n"
    "environment: TANG_VK_VALIDATE=1 enables VK_LAYER_KHRONOS_validation when\n"
    "it is installed; TANG_VK_TIMEOUT_S bounds the wait for the launches\n"
    "(600 s by default).\n"
    "\n"
    "exit codes: 0 success, 1 error, 2 no Vulkan loader, driver or device\n";

/// The command line.
struct Options {
  std::string bundleDir;
  std::string function;
  std::vector<std::string> inputs;
  std::map<unsigned, int64_t> sizes;
  std::string outDir;
  bool probe = false;
  bool verbose = false;
  int timeRuns = 0;
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
    } else if (a == "--size") {
      if (i + 1 >= argc)
        return Status::error("--size needs argK=N");
      TRY(toStatus(tang::runtime::parseSizeArg(argv[++i], o.sizes)));
    } else if (a == "--time") {
      char *end = nullptr;
      long n = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || !*argv[i + 1] || *end || n < 1 || n > 100000)
        return Status::error("--time needs a number of runs from 1 to 100000");
      o.timeRuns = int(n);
      ++i;
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

Status runMain(const Options &o, Runner &runner) {
  bool validate = false;
  if (const char *v = std::getenv("TANG_VK_VALIDATE"))
    validate = std::strcmp(v, "1") == 0;

  if (o.probe) {
    TRY(runner.init(validate, o.verbose));
    std::printf("%s\n", runner.deviceName().c_str());
    if (o.verbose)
      std::fprintf(stderr, "tang-vk-run: %s\n", runner.describe().c_str());
    return {};
  }

  // Everything that needs no device first: the manifest, the module, the
  // inputs.
  tang::runtime::Expected<Manifest> manifest =
      Manifest::loadFile(o.bundleDir + "/manifest.json", checkSpirvFormat);
  if (!manifest)
    return toStatus(manifest.error());
  const FunctionSpec *f = nullptr;
  std::string names;
  for (const FunctionSpec &g : manifest->functions) {
    names += (names.empty() ? "" : ", ") + ("@" + g.name);
    if (g.name == o.function)
      f = &g;
  }
  if (!f)
    return Status::error("the bundle has no function @" + o.function +
                         " (it has: " + (names.empty() ? "none" : names) + ")");
  // The inputs' shapes and --size give the function's sizes.
  std::vector<Npy> npys;
  std::vector<std::vector<int64_t>> shapes;
  if (o.inputs.size() == f->numInputs())
    for (const std::string &path : o.inputs) {
      tang::runtime::Expected<Npy> read = tang::runtime::readNpy(path);
      if (!read)
        return toStatus(read.error());
      shapes.push_back(read->shape);
      npys.push_back(std::move(*read));
    }
  tang::runtime::Expected<FunctionSpec> instance =
      f->instantiate(shapes, o.sizes);
  if (!instance)
    return toStatus(instance.error());
  f = &*instance;

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
    const Npy &npy = npys[k];
    std::string what = o.inputs[k] + " (input #" + std::to_string(k) + ")";
    if (npy.shape != b.shape)
      return Status::error(what + ": shape " + shapeString(npy.shape) +
                           ", but input #" + std::to_string(k) + " of @" +
                           f->name + " is " + shapeString(b.shape));
    inputs[k].resize(b.numBytes());
    TRY(convertInput(npy, b, what, inputs[k].data()));
    ++k;
  }
  // After the shapes: an id outside its table, before any device work.
  TRY(toStatus(tang::runtime::checkIndexInputs(*f, npys, o.inputs)));

  std::string imagePath = o.bundleDir + "/" + manifest->image;
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
    TRY(toStatus(tang::runtime::makeDirs(o.outDir)));
  TRY(runner.init(validate, o.verbose));
  std::printf("tang-vk-run: @%s on \"%s\": %zu launch(es)\n", f->name.c_str(),
              runner.deviceName().c_str(), f->launches.size());
  TRY(runner.run(*f, spirv, info, inputs, o.outDir, o.timeRuns));
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
