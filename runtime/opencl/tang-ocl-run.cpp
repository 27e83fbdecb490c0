//===- tang-ocl-run.cpp - Run a function of a tang OpenCL bundle -*- C++
//-*-===//
//
// tang-ocl-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR] [--time N]
//
// Loads a bundle written by `tang-opt --tang-lower-opencl="bundle=DIR"`
// (manifest.json plus OpenCL C source, see docs/Bundle.md), reads one
// .npy file per input argument, builds the source for the first OpenCL
// GPU (else the first device of any type), runs the function's launches
// once and writes output #k (in argument order) to DIR/output_<k>.npy:
// float outputs (f16, f32, f64) as float64, i32 outputs as int32,
// as tang-run writes them. Every OpenCL call is checked; a failed build
// prints the compiler's log. With --time N the launches then run N times
// more, each run timed by the queue's profiling events (the first
// launch's start to the last one's end); the median, least and greatest
// are printed in tang-vk-run's format.
//
// Exit codes: 0 success; 1 bad usage, bundle, input or a failing OpenCL
// call; 2 no OpenCL platform or device.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "Npy.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tang::runtime;

namespace {

constexpr int kNoDeviceExit = 2;

int fail(const std::string &message, int code = 1) {
  std::fprintf(stderr, "tang-ocl-run: error: %s\n", message.c_str());
  return code;
}

std::string clError(const char *call, cl_int status) {
  return std::string(call) + " failed with OpenCL error " +
         std::to_string(status);
}

std::string checkOpenCLFormat(const std::string &format) {
  if (format == "opencl")
    return "";
  return "unknown format \"" + format +
         "\" (expected \"opencl\": a bundle of --tang-lower-opencl)";
}

bool isSupportedIO(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 ||
         t == DType::I32;
}

std::string deviceString(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) || !size)
    return "?";
  std::string s(size, '\0');
  clGetDeviceInfo(device, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

/// The first GPU of any platform, else the first device of any type.
cl_device_id chooseDevice(const std::vector<cl_platform_id> &platforms) {
  for (cl_device_type type :
       {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)})
    for (cl_platform_id p : platforms) {
      cl_device_id device = nullptr;
      if (clGetDeviceIDs(p, type, 1, &device, nullptr) == CL_SUCCESS && device)
        return device;
    }
  return nullptr;
}

/// The nanoseconds between the start of `first` and the end of `last`.
cl_int elapsedNs(cl_event first, cl_event last, double &ns) {
  cl_ulong start = 0, end = 0;
  if (cl_int st = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START,
                                          sizeof start, &start, nullptr))
    return st;
  if (cl_int st = clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END,
                                          sizeof end, &end, nullptr))
    return st;
  ns = double(end - start);
  return CL_SUCCESS;
}

/// Releases OpenCL objects at scope exit.
struct Resources {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  std::vector<cl_mem> buffers;
  std::vector<cl_kernel> kernels;
  ~Resources() {
    for (cl_kernel k : kernels)
      clReleaseKernel(k);
    for (cl_mem m : buffers)
      if (m)
        clReleaseMemObject(m);
    if (program)
      clReleaseProgram(program);
    if (queue)
      clReleaseCommandQueue(queue);
    if (context)
      clReleaseContext(context);
  }
};

int run(int argc, char **argv) {
  std::vector<std::string> positional;
  std::string outDir = ".";
  std::map<unsigned, int64_t> sizeArgs;
  int timeRuns = 0;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--time") {
      char *end = nullptr;
      long n = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || !*argv[i + 1] || *end || n < 1 || n > 100000)
        return fail("--time needs a number of runs from 1 to 100000");
      timeRuns = int(n);
      ++i;
    } else if (a == "-v") {
      verbose = true;
    } else if (a == "--out") {
      if (++i == argc)
        return fail("--out needs a directory");
      outDir = argv[i];
    } else if (a == "--size") {
      if (++i == argc)
        return fail("--size needs argK=N");
      if (Error e = parseSizeArg(argv[i], sizeArgs))
        return fail(e.message());
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: tang-ocl-run BUNDLE_DIR FUNCTION [INPUT.npy ...] "
          "[--size argK=N ...] [--out DIR] [--time N] [-v]\n\n"
          "Runs FUNCTION of the tang OpenCL bundle in BUNDLE_DIR on the "
          "first OpenCL GPU\n(else the first device), one .npy file per "
          "input, and writes output #k to\nDIR/output_<k>.npy.\n\n"
          "  --time N  then run the launches N more times and print their "
          "median, least\n            and greatest time (profiling "
          "events)\n"
          "  -v        print the device used\n");
      return 0;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2)
    return fail("usage: tang-ocl-run BUNDLE_DIR FUNCTION [INPUT.npy ...] "
                "[--out DIR]");
  const std::string dir = positional[0], name = positional[1];
  Expected<Manifest> manifest =
      Manifest::loadFile(dir + "/manifest.json", checkOpenCLFormat);
  if (!manifest)
    return fail(manifest.error().message());
  const FunctionSpec *fn = manifest->find(name);
  if (!fn)
    return fail("the bundle has no function '" + name + "'");
  size_t numInputs = fn->numInputs();
  if (positional.size() - 2 != numInputs)
    return fail("'" + name + "' takes " + std::to_string(numInputs) +
                " inputs, got " + std::to_string(positional.size() - 2));
  // Inputs; their shapes and --size give the function's sizes.
  std::vector<Npy> npys;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < numInputs; ++k) {
    Expected<Npy> npy = readNpy(positional[2 + k]);
    if (!npy)
      return fail("input #" + std::to_string(k) + " (" + positional[2 + k] +
                  "): " + npy.error().message());
    shapes.push_back(npy->shape);
    npys.push_back(std::move(*npy));
  }
  Expected<FunctionSpec> instance = fn->instantiate(shapes, sizeArgs);
  if (!instance)
    return fail(instance.error().message());
  fn = &*instance;
  for (const BufferSpec &b : fn->args)
    if (!isSupportedIO(b.dtype))
      return fail(std::string("'") + name + "' has a " + dtypeName(b.dtype) +
                  " buffer; tang-ocl-run reads and writes f32, f64, f16 and "
                  "i32");

  // Inputs, converted to their buffers' contents.
  std::vector<std::vector<char>> hostInputs(numInputs);
  for (size_t k = 0; k < numInputs; ++k) {
    const BufferSpec &b = fn->args[k];
    std::string what =
        "input #" + std::to_string(k) + " (" + positional[2 + k] + ")";
    const Npy *npy = &npys[k];
    if (npy->shape != b.shape)
      return fail(what + ": shape " + npyShapeString(npy->shape) +
                  ", the function expects " + npyShapeString(b.shape));
    hostInputs[k].resize(b.numBytes());
    if (Error e = convertNpyInput(*npy, b, what, hostInputs[k].data()))
      return fail(e.message());
  }
  // After the shapes: an id outside its table, before any device work.
  if (Error e = checkIndexInputs(
          *fn, npys,
          std::vector<std::string>(positional.begin() + 2, positional.end())))
    return fail(e.message());
  Expected<std::string> source = readFile(dir + "/" + manifest->image);
  if (!source)
    return fail(source.error().message());

  // The first platform with a device.
  cl_uint numPlatforms = 0;
  cl_int st = clGetPlatformIDs(0, nullptr, &numPlatforms);
  if (st != CL_SUCCESS || numPlatforms == 0)
    return fail("no OpenCL platform (install an ICD such as pocl-opencl-icd)",
                kNoDeviceExit);
  std::vector<cl_platform_id> platforms(numPlatforms);
  if ((st = clGetPlatformIDs(numPlatforms, platforms.data(), nullptr)))
    return fail(clError("clGetPlatformIDs", st));
  cl_device_id device = chooseDevice(platforms);
  if (!device)
    return fail("no OpenCL device", kNoDeviceExit);
  if (verbose)
    std::printf("device: %s (%s)\n",
                deviceString(device, CL_DEVICE_NAME).c_str(),
                deviceString(device, CL_DEVICE_VERSION).c_str());

  Resources r;
  r.context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &st);
  if (st)
    return fail(clError("clCreateContext", st));
  r.queue = clCreateCommandQueue(r.context, device,
                                 timeRuns ? CL_QUEUE_PROFILING_ENABLE : 0, &st);
  if (st)
    return fail(clError("clCreateCommandQueue", st));
  const char *text = source->c_str();
  size_t length = source->size();
  r.program = clCreateProgramWithSource(r.context, 1, &text, &length, &st);
  if (st)
    return fail(clError("clCreateProgramWithSource", st));
  if ((st = clBuildProgram(r.program, 1, &device, "-cl-std=CL1.2", nullptr,
                           nullptr))) {
    size_t logSize = 0;
    clGetProgramBuildInfo(r.program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr,
                          &logSize);
    std::string log(logSize, '\0');
    clGetProgramBuildInfo(r.program, device, CL_PROGRAM_BUILD_LOG, logSize,
                          log.data(), nullptr);
    return fail(clError("clBuildProgram", st) + "; build log:\n" + log);
  }

  // One buffer per argument, then per temporary.
  auto makeBuffer = [&](const BufferSpec &b, const void *init) -> cl_mem {
    cl_mem m = clCreateBuffer(
        r.context, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
        std::max<size_t>(b.numBytes(), 1), const_cast<void *>(init), &st);
    r.buffers.push_back(m);
    return st ? nullptr : m;
  };
  std::vector<cl_mem> args, temps;
  for (size_t k = 0; k < fn->args.size(); ++k) {
    // An output updated in place is its input's buffer.
    if (fn->args[k].aliasOf >= 0) {
      args.push_back(args[size_t(fn->args[k].aliasOf)]);
      continue;
    }
    cl_mem m =
        makeBuffer(fn->args[k], k < numInputs ? hostInputs[k].data() : nullptr);
    if (!m)
      return fail(clError("clCreateBuffer", st) + " for argument #" +
                  std::to_string(k));
    args.push_back(m);
  }
  for (size_t k = 0; k < fn->temporaries.size(); ++k) {
    const BufferSpec &t = fn->temporaries[k];
    cl_mem m = makeBuffer(t, t.init.empty() ? nullptr : t.init.data());
    if (!m)
      return fail(clError("clCreateBuffer", st) + " for temporary #" +
                  std::to_string(k));
    temps.push_back(m);
  }

  // The kernels with their arguments, then the launches as a function.
  struct Launch {
    cl_kernel kernel;
    size_t local[3], global[3];
    std::string where;
  };
  std::vector<Launch> launches;
  for (size_t n = 0; n < fn->launches.size(); ++n) {
    const LaunchSpec &l = fn->launches[n];
    std::string where = "launch #" + std::to_string(n) + " (" + l.kernel + ")";
    if (l.sharedBytes)
      return fail(where + " needs dynamic shared memory, which the OpenCL "
                          "bundle does not describe");
    cl_kernel kernel = clCreateKernel(r.program, l.kernel.c_str(), &st);
    if (st)
      return fail(clError("clCreateKernel", st) + " for " + where);
    r.kernels.push_back(kernel);
    for (size_t a = 0; a < l.args.size(); ++a) {
      cl_mem m = l.args[a].isTemporary ? temps[l.args[a].index]
                                       : args[l.args[a].index];
      if ((st = clSetKernelArg(kernel, cl_uint(a), sizeof(cl_mem), &m)))
        return fail(clError("clSetKernelArg", st) + " for " + where);
    }
    launches.push_back(
        {kernel,
         {l.block.x, l.block.y, l.block.z},
         {size_t(l.grid.x) * l.block.x, size_t(l.grid.y) * l.block.y,
          size_t(l.grid.z) * l.block.z},
         where});
  }
  // Enqueues every launch; with `events`, the first's and the last's.
  auto enqueue = [&](cl_event *first, cl_event *last) -> int {
    for (size_t n = 0; n < launches.size(); ++n) {
      const Launch &l = launches[n];
      cl_event *event = nullptr;
      if (first && n == 0)
        event = first;
      else if (last && n + 1 == launches.size())
        event = last;
      if ((st = clEnqueueNDRangeKernel(r.queue, l.kernel, 3, nullptr, l.global,
                                       l.local, 0, nullptr, event)))
        return fail(clError("clEnqueueNDRangeKernel", st) + " for " + l.where);
    }
    if ((st = clFinish(r.queue)))
      return fail(clError("clFinish", st));
    return 0;
  };
  if (int rc = enqueue(nullptr, nullptr))
    return rc;

  if (Error e = makeDirs(outDir))
    return fail(e.message());
  for (size_t k = numInputs, o = 0; k < fn->args.size(); ++k, ++o) {
    const BufferSpec &b = fn->args[k];
    std::vector<char> data(b.numBytes());
    if ((st = clEnqueueReadBuffer(r.queue, args[k], CL_TRUE, 0, data.size(),
                                  data.data(), 0, nullptr, nullptr)))
      return fail(clError("clEnqueueReadBuffer", st) + " for output #" +
                  std::to_string(o));
    std::string path = outDir + "/output_" + std::to_string(o) + ".npy";
    if (Error e = writeBufferNpy(path, b, data.data()))
      return fail(e.message());
  }
  if (!timeRuns || launches.empty())
    return 0;
  // The timed runs, after the outputs are written (they run in place).
  std::vector<double> ms;
  for (int t = 0; t < timeRuns; ++t) {
    cl_event first = nullptr, last = nullptr;
    bool one = launches.size() == 1;
    if (int rc = enqueue(&first, one ? nullptr : &last))
      return rc;
    double ns = 0;
    st = elapsedNs(first, one ? first : last, ns);
    clReleaseEvent(first);
    if (last)
      clReleaseEvent(last);
    if (st)
      return fail(clError("clGetEventProfilingInfo", st));
    ms.push_back(ns * 1e-6);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("  time: median %.4f ms, least %.4f, greatest %.4f over %d "
              "runs (profiling events; buffers in device memory)\n",
              ms[ms.size() / 2], ms.front(), ms.back(), timeRuns);
  return 0;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
