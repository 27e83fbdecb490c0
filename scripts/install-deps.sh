#!/usr/bin/env bash
# Installs every Debian package tang needs (apt only; PyPI is not used), then
# the WGSL host's npm package and Mesa 25 files (scripts/install-webgpu.sh)
# and a newer spirv-val built from Debian 13's source
# (scripts/install-spirv-val.sh), both into .deps/. Idempotent: installs nothing when everything is already there.
set -euo pipefail

PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools   # MLIR/LLVM 22
  clang-22 lld-22 ninja-build cmake clang-format-22         # toolchain
  libclang-rt-22-dev                                        # ASan, UBSan, libFuzzer (scripts/fuzz.sh)
  python3-numpy python3-pytest                              # NumPy tests
  python3-pip python3-setuptools                            # pip install ./python (test-install.sh)
  spirv-tools glslang-tools                                 # spirv-val, spirv-link, glslangValidator
  mesa-vulkan-drivers libvulkan-dev vulkan-tools            # Vulkan (lavapipe)
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers         # OpenCL (PoCL)
  curl                                                      # install-spirv-val.sh
  libglpk-dev libgmp-dev                                    # traffic-bound LP, exact checks
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "[tang] dependencies: all ${#PACKAGES[@]} packages present"
else
  echo "[tang] dependencies: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  echo "[tang] dependencies: done"
fi

# The WGSL host's Dawn (npm) and Mesa 25's lavapipe, and a spirv-val that
# knows KHR_cooperative_matrix: project-local, in .deps.
bash "$(dirname "$0")/install-webgpu.sh"
bash "$(dirname "$0")/install-spirv-val.sh"
