#!/usr/bin/env bash
# A spirv-val that knows SPV_KHR_cooperative_matrix, for the SPIR-V backend's
# matrix-unit kernels: Debian 12's spirv-tools (2023.1) predates it, and
# Debian 13's binaries need a newer glibc. So: SPIRV-Tools' source and
# SPIRV-Headers from Debian 13 (trixie), fetched with a private apt
# configuration (nothing installed system-wide), checked against the
# archive's SHA256 sums, and only the spirv-val tool built (a few minutes on
# two cores) into .deps/spirv-tools/bin (TANG_DEPS_DIR).
# Idempotent: does nothing when that spirv-val exists.
set -euo pipefail
cd "$(dirname "$0")/.."

DEPS="${TANG_DEPS_DIR:-$PWD/.deps}"
out="$DEPS/spirv-tools"
if [ -x "$out/bin/spirv-val" ]; then
  echo "[tang] spirv-val: $("$out/bin/spirv-val" --version | head -n1) present"
  exit 0
fi

work="$out/work"
rm -rf "$out"
echo "[tang] spirv-val: fetching SPIRV-Tools and SPIRV-Headers (Debian trixie)"
source scripts/private-apt.sh
private_apt "$work/apt" trixie deb-src

# 'URL' file size SHA256:sum, from the signed indices; fetch and check each.
fetch() {
  local line url file sum
  line=$(grep -F "$1" | head -n1)
  if [ -z "$line" ]; then
    echo "[tang] spirv-val: error: no $1 in Debian trixie's index" >&2
    exit 1
  fi
  url=$(echo "$line" | cut -d"'" -f2)
  file=$(echo "$line" | awk '{print $2}')
  sum=$(echo "$line" | sed -n 's/.*SHA256:\([0-9a-f]*\).*/\1/p')
  curl -fsSL -o "$work/$file" "$url"
  echo "$sum  $work/$file" | sha256sum -c --quiet
  echo "$work/$file"
}
tarball=$(apt-get -q "${apt_opts[@]}" source --print-uris spirv-tools | fetch ".orig.tar")
headers=$(apt-get -q "${apt_opts[@]}" download --print-uris spirv-headers | fetch "spirv-headers_")

mkdir -p "$work/src" "$work/headers"
tar -xf "$tarball" -C "$work/src" --strip-components=1
dpkg -x "$headers" "$work/headers"
# SPIRV-Tools reads the grammars from a SPIRV-Headers source tree.
mkdir -p "$work/SPIRV-Headers"
cp -r "$work/headers/usr/include" "$work/SPIRV-Headers/include"

echo "[tang] spirv-val: building spirv-val ($(nproc) jobs)"
# Its version comes from `git describe` in the source tree: not tang's.
export GIT_CEILING_DIRECTORIES="$work"
cmake -G Ninja -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DSPIRV-Headers_SOURCE_DIR="$work/SPIRV-Headers" -DSPIRV_SKIP_TESTS=ON \
  -DSPIRV_WERROR=OFF -DPython3_EXECUTABLE=/usr/bin/python3 >"$work/cmake.log"
ninja -C "$work/build" spirv-val >"$work/build.log" || {
  tail -n 30 "$work/build.log" >&2
  exit 1
}
mkdir -p "$out/bin"
cp "$work/build/tools/spirv-val" "$out/bin/spirv-val"
rm -rf "$work"
echo "[tang] spirv-val: $("$out/bin/spirv-val" --version | head -n1) in $out/bin"
