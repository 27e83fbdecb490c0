#!/usr/bin/env bash
# What the WGSL backend's host (runtime/webgpu) needs, kept inside the
# project under .deps/ (TANG_DEPS_DIR), nothing system-wide but Debian's
# nodejs/npm when node is missing:
#   .deps/webgpu   the npm package `webgpu` (Dawn for Node, with Tint)
#   .deps/mesa25   Mesa 25's lavapipe from Debian's bookworm-backports,
#                  unpacked, not installed: Dawn finds no adapter on
#                  Debian 12's Mesa 22.3 (it lacks a feature Dawn requires)
# Idempotent: downloads nothing when both are present.
set -euo pipefail
cd "$(dirname "$0")/.."

DEPS="${TANG_DEPS_DIR:-$PWD/.deps}"
WEBGPU_VERSION=0.6.2
MESA_PACKAGES=(mesa-vulkan-drivers libdrm2 libdrm-amdgpu1)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if ! command -v npm >/dev/null 2>&1; then
  echo "[tang] webgpu: installing nodejs and npm (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi

webgpu="$DEPS/webgpu/node_modules/webgpu/package.json"
if [ -f "$webgpu" ] && grep -q "\"version\": \"$WEBGPU_VERSION\"" "$webgpu"; then
  echo "[tang] webgpu: npm package webgpu@$WEBGPU_VERSION present"
else
  echo "[tang] webgpu: npm install webgpu@$WEBGPU_VERSION into $DEPS/webgpu"
  mkdir -p "$DEPS/webgpu"
  (cd "$DEPS/webgpu" && npm install --prefix . --no-audit --no-fund \
    --no-package-lock --silent "webgpu@$WEBGPU_VERSION")
fi

mesa="$DEPS/mesa25"
if [ -f "$mesa/lvp_icd.json" ]; then
  echo "[tang] webgpu: Mesa 25 lavapipe present in $mesa"
  exit 0
fi

# Mesa's packages from bookworm-backports, with a private apt configuration
# whose lists and cache stay in .deps.
echo "[tang] webgpu: downloading ${MESA_PACKAGES[*]} (bookworm-backports)"
apt_dir="$mesa/apt"
rm -rf "$mesa"
mkdir -p "$mesa/debs"
source scripts/private-apt.sh
private_apt "$apt_dir" bookworm-backports
(cd "$mesa/debs" && apt-get -q "${apt_opts[@]}" download "${MESA_PACKAGES[@]}" >/dev/null)
for deb in "$mesa"/debs/*.deb; do
  dpkg -x "$deb" "$mesa/root"
done
lib=$(find "$mesa/root" -name libvulkan_lvp.so | head -n1)
if [ -z "$lib" ]; then
  echo "[tang] webgpu: error: no libvulkan_lvp.so in the downloaded Mesa" >&2
  exit 1
fi
missing=$(LD_LIBRARY_PATH="$(dirname "$lib")" ldd "$lib" | grep "not found" || true)
if [ -n "$missing" ]; then
  echo "[tang] webgpu: error: Mesa 25's lavapipe needs libraries this machine lacks:" >&2
  echo "$missing" >&2
  exit 1
fi
# The ICD manifest names the driver by absolute path; the host points
# VK_DRIVER_FILES at it and LD_LIBRARY_PATH at the unpacked libraries.
cat > "$mesa/lvp_icd.json" <<EOF
{
    "ICD": {
        "api_version": "1.4.305",
        "library_path": "$lib"
    },
    "file_format_version": "1.0.0"
}
EOF
dirname "$lib" > "$mesa/library_path"
rm -rf "$apt_dir" "$mesa/debs"
echo "[tang] webgpu: Mesa 25 lavapipe unpacked into $mesa"
