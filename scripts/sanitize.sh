#!/usr/bin/env bash
# The lit suite and the interpreter's NumPy tests against tang built with
# ASan and UBSan (build-fuzz/, configured by scripts/fuzz.sh), then the C++
# hosts of the runtimes built with both (build-{ocl,vk,rt}-san/) under
# their differential and robustness tests: any report fails the run.
# libMLIR.so is not instrumented (see fuzz.sh for why manual poisoning is
# off).
#
# Usage: bash scripts/sanitize.sh        (TANG_JOBS as build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-fuzz
JOBS="${TANG_JOBS:-$(nproc)}"
[ -f "$BUILD_DIR/build.ninja" ] || { bash scripts/fuzz.sh 0 >/dev/null; }
echo "[tang] building the sanitized tools in $BUILD_DIR (-j$JOBS)"
ninja -C "$BUILD_DIR" -j"$JOBS" tang-opt tang-run tang-translate
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0:detect_container_overflow=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
# Not Plugin/ (an instrumented plugin cannot load into the uninstrumented
# mlir-opt) nor Docs/ (the generated docs are not built here).
echo "[tang] lit against the ASan+UBSan tools"
/usr/lib/llvm-22/bin/lit -sv --filter-out "Plugin/|Docs/" "$BUILD_DIR/test"
echo "[tang] the interpreter's NumPy tests against the ASan+UBSan tools"
TANG_BIN="$PWD/$BUILD_DIR/bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  test/Interpreter test/Examples/test_examples.py

# The C++ hosts of the runtimes (runtime/opencl, vulkan, cuda: each a small
# standalone build) with ASan and UBSan, where their headers are: their
# differential tests (every example, the fused blocks too: their row
# kernels take seconds on lavapipe), the bad-input, damaged-bundle, size
# and id checks, and tang-cuda-run's manifest and input checks (no driver
# here). The drivers they load (PoCL, lavapipe) are not instrumented.
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
build_host() { # build_host RUNTIME DIR
  [ -f "$2/build.ninja" ] || cmake -G Ninja -S "runtime/$1" -B "$2" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" \
    -DCMAKE_SHARED_LINKER_FLAGS="$SAN" >/dev/null
  ninja -C "$2" >/dev/null
}
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
hosts=()
if [ -f /usr/include/CL/cl.h ]; then
  build_host opencl build-ocl-san
  export TANG_OCL_RUN="$PWD/build-ocl-san/tang-ocl-run"
  hosts+=(test/Runtime/test_opencl_differential.py)
fi
if [ -f /usr/include/vulkan/vulkan.h ]; then
  build_host vulkan build-vk-san
  export TANG_VK_RUN="$PWD/build-vk-san/tang-vk-run"
  hosts+=(test/Runtime/test_vulkan_differential.py)
fi
if [ -f /usr/local/cuda/include/cuda.h ]; then
  build_host cuda build-rt-san
  export TANG_CUDA_RUN="$PWD/build-rt-san/tang-cuda-run"
  hosts+=(test/Runtime/test_bundle_manifest.py)
fi
if [ ${#hosts[@]} -gt 0 ]; then
  echo "[tang] the runtimes' hosts with ASan+UBSan: ${hosts[*]}"
  TANG_BIN="$PWD/${TANG_BUILD_DIR:-build}/bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    "${hosts[@]}" \
    -k "not lavapipe_loop_limit"
fi
echo "[tang] sanitizers: no report"
