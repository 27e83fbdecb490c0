#!/usr/bin/env bash
# Lowers every example through --tang-lower-cuda (with fusion) into bundles
# under $3 and checks each PTX image with ptxas: lower-all-examples.sh
# <tang-opt> <ptxas> <out dir> <examples...>
set -euo pipefail
tang_opt=$1 ptxas=$2 out=$3
shift 3
for f in "$@"; do
  n=$(basename "$f" .mlir)
  "$tang_opt" "$f" --tang-lower-cuda="fuse=1 bundle=$out/$n" -o /dev/null
  "$ptxas" -arch=sm_90a "$out/$n/tang_kernels.ptx" -o "$out/$n.cubin"
  echo "ok $n"
done
