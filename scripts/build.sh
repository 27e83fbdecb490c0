#!/usr/bin/env bash
# Configures (once) and builds tang into ./build with clang-22, lld and Ninja,
# linked against libMLIR.so. Idempotent: a second run only rebuilds what
# changed. Set TANG_BUILD_DIR to build elsewhere, TANG_JOBS to cap jobs.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${TANG_BUILD_DIR:-build}"
JOBS="${TANG_JOBS:-$(nproc)}"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "[tang] configuring $BUILD_DIR"
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld
fi
echo "[tang] building $BUILD_DIR (-j$JOBS)"
ninja -C "$BUILD_DIR" -j"$JOBS" tang-opt tang-run tang-translate TangPlugin
