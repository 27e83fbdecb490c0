#!/usr/bin/env bash
# The README's second command: installs what is missing, builds tang, and
# runs the whole test suite: the format check, the lit tests, then the NumPy
# tests.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

bash scripts/check-format.sh

# The CUDA runtime builds wherever the CUDA headers are (no GPU needed); its
# tests then also drive the C++ CLI against a fake driver.
if [ -f /usr/local/cuda/include/cuda.h ]; then
  echo "[tang] building the CUDA runtime (runtime/cuda -> build-rt)"
  [ -f build-rt/build.ninja ] || cmake -G Ninja -S runtime/cuda -B build-rt >/dev/null
  ninja -C build-rt
  export TANG_CUDA_RUN="$PWD/build-rt/tang-cuda-run"
fi

# The Vulkan runtime builds wherever the Vulkan headers are; its differential
# tests run every example's SPIR-V bundle on the first Vulkan device (lavapipe,
# Mesa's CPU driver, on machines without a GPU) against the interpreter.
if [ -f /usr/include/vulkan/vulkan.h ]; then
  echo "[tang] building the Vulkan runtime (runtime/vulkan -> build-vk)"
  [ -f build-vk/build.ninja ] || cmake -G Ninja -S runtime/vulkan -B build-vk >/dev/null
  ninja -C build-vk
  export TANG_VK_RUN="$PWD/build-vk/tang-vk-run"
fi

# The OpenCL runtime builds wherever the OpenCL headers are; its differential
# tests run every example's OpenCL C bundle on the first OpenCL device (PoCL
# on the CPU) against the interpreter.
if [ -f /usr/include/CL/cl.h ]; then
  echo "[tang] building the OpenCL runtime (runtime/opencl -> build-ocl)"
  [ -f build-ocl/build.ninja ] || cmake -G Ninja -S runtime/opencl -B build-ocl >/dev/null
  ninja -C build-ocl
  export TANG_OCL_RUN="$PWD/build-ocl/tang-ocl-run"
fi

# The backends this run must exercise (test/conftest.py): a test skipped
# for want of one of them fails, naming it. CUDA's ptxas and libdevice
# have no Debian package: where they are absent the CUDA checks that need
# them do not run, and this says so.
required="c,opencl,vulkan,glsl,wgsl,spirv-val,metal-lint,mlir-opt"
if [ -x /usr/local/cuda/bin/ptxas ] && [ -d /usr/local/cuda/nvvm/libdevice ]; then
  required="$required,cuda"
else
  echo "[tang] CUDA's ptxas/libdevice are not installed: the CUDA checks" \
    "that need them are skipped (listed at the end of the run)"
fi
export TANG_REQUIRED_BACKENDS="${TANG_REQUIRED_BACKENDS-$required}"
echo "[tang] required backends: $TANG_REQUIRED_BACKENDS"
BUILD_DIR="${TANG_BUILD_DIR:-build}"
echo "[tang] running check-tang"
ninja -C "$BUILD_DIR" check-tang

# The installed package: cmake --install, an out-of-tree consumer built with
# find_package(Tang), and upstream mlir-opt with TangPlugin.so.
bash scripts/test-install.sh

# No circle in the include and call graphs of lib/.
/usr/bin/python3 scripts/check-layering.py --build "$BUILD_DIR"
# Fuzzing: tang built with ASan, UBSan and libFuzzer (build-fuzz/), the
# parse/verify/passes target run for a fixed budget from every .mlir of
# the repository and the regression corpus (scripts/fuzz.sh).
bash scripts/fuzz.sh "${TANG_FUZZ_SECONDS:-60}"
# The lit suite and the interpreter's tests against ASan+UBSan tools.
bash scripts/sanitize.sh
