#!/usr/bin/env bash
# Lowers every example (with fusion) into bundles under <out dir> and checks
# each image: `cuda` runs ptxas -arch=sm_90a on the PTX, `spirv` runs
# spirv-val --target-env vulkan1.1 on the .spv, `metal` compiles the .metal
# as C++ with clang against a stub metal_stdlib (a lint).
# lower-all-examples.sh cuda|spirv|metal <tang-opt> <checker> <out dir> <examples...>
set -euo pipefail
backend=$1 tang_opt=$2 checker=$3 out=$4
shift 4
for f in "$@"; do
  n=$(basename "$f" .mlir)
  case "$backend" in
  cuda)
    "$tang_opt" "$f" --tang-lower-cuda="fuse=1 bundle=$out/$n" -o /dev/null
    "$checker" -arch=sm_90a "$out/$n/tang_kernels.ptx" -o "$out/$n.cubin" ;;
  spirv)
    "$tang_opt" "$f" --tang-lower-spirv="fuse=1 bundle=$out/$n" -o /dev/null
    "$checker" --target-env vulkan1.1 "$out/$n/tang_kernels.spv" ;;
  metal)
    # A lint, not a Metal compiler: the MSL as C++ against the project's
    # stub metal_stdlib (test/Target/Metal/stub).
    "$tang_opt" "$f" --tang-lower-metal="fuse=1 bundle=$out/$n" -o /dev/null
    "$checker" -x c++ -std=c++17 -fsyntax-only -Wno-unknown-attributes \
      -I "$(dirname "$0")/../../Target/Metal/stub" "$out/$n/tang_kernels.metal" ;;
  *) echo "unknown backend '$backend'" >&2; exit 2 ;;
  esac
  echo "ok $n"
done
