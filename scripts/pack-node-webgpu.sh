#!/usr/bin/env bash
# Packs Node and the npm package webgpu (Dawn for Node, linux-x64 only) into
# gpu-work/node-webgpu.tar.xz for a GPU machine without Node: bin/node and
# webgpu/node_modules/webgpu. bench/bench_portable.py unpacks it there and
# runs tang-wgpu-run on the machine's Vulkan driver (bench/README.md).
# Needs scripts/install-webgpu.sh's .deps/webgpu (TANG_DEPS_DIR) and node.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="${TANG_DEPS_DIR:-$root/.deps}"
pkg="$deps/webgpu/node_modules/webgpu"
node="$(command -v node || true)"
if [ -z "$node" ] || [ ! -f "$pkg/dist/linux-x64/dawn.node" ]; then
  echo "pack-node-webgpu: error: needs node and $pkg (scripts/install-webgpu.sh)" >&2
  exit 1
fi
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/webgpu/node_modules/webgpu/dist"
cp "$(readlink -f "$node")" "$stage/bin/node"
cp -r "$pkg/index.js" "$pkg/package.json" "$stage/webgpu/node_modules/webgpu/"
[ -d "$pkg/build" ] && cp -r "$pkg/build" "$stage/webgpu/node_modules/webgpu/"
cp -r "$pkg/dist/linux-x64" "$stage/webgpu/node_modules/webgpu/dist/"
mkdir -p "$root/gpu-work"
out="$root/gpu-work/node-webgpu.tar.xz"
echo "pack-node-webgpu: writing $out (xz, about a minute)" >&2
tar -C "$stage" -cJf "$out" .
ls -la "$out"
