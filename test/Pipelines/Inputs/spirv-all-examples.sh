#!/usr/bin/env bash
# Lowers every example through --tang-lower-spirv (with fusion) into bundles
# under $3 and validates each .spv for Vulkan 1.1 with spirv-val:
# spirv-all-examples.sh <tang-opt> <spirv-val> <out dir> <examples...>
set -euo pipefail
tang_opt=$1 spirv_val=$2 out=$3
shift 3
for f in "$@"; do
  n=$(basename "$f" .mlir)
  "$tang_opt" "$f" --tang-lower-spirv="fuse=1 bundle=$out/$n" -o /dev/null
  "$spirv_val" --target-env vulkan1.1 "$out/$n/tang_kernels.spv"
  echo "ok $n"
done
