#!/usr/bin/env bash
# The installed package, tested as a downstream project would use it:
#   1. `cmake --install` the build tree into a scratch prefix;
#   2. the installed tang-opt runs (its run-time paths hold outside build/);
#   3. an out-of-tree consumer (test/Install/consumer, 20 lines) configures
#      with find_package(Tang), links Tang::MLIRTangTransforms and runs
#      --tang-fuse on an example;
#   4. upstream mlir-opt loads the installed TangPlugin.so as dialect and pass
#      plugin and runs the same pass.
# The three fused programs must be identical. Needs a configured, built tree
# (scripts/build.sh); run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${TANG_BUILD_DIR:-build}"
MLIR_OPT="${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
example=examples/layernorm.mlir

echo "[tang] installing $BUILD_DIR into a scratch prefix"
cmake --install "$BUILD_DIR" --prefix "$prefix" >"$work/install.log"
for f in bin/tang-opt bin/tang-run bin/tang-translate lib/TangPlugin.so \
         lib/cmake/tang/TangConfig.cmake lib/cmake/tang/TangTargets.cmake \
         include/Tang/Dialect/Tang/IR/TangOps.h.inc \
         include/Tang/Transforms/Passes.td lib/libMLIRTang.a; do
  [ -e "$prefix/$f" ] || { echo "error: the install lacks $f" >&2; exit 1; }
done

"$prefix/bin/tang-opt" --tang-fuse "$example" >"$work/tang-opt.mlir"

echo "[tang] building the out-of-tree consumer against the installed package"
cmake -G Ninja -S test/Install/consumer -B "$work/consumer" \
  -DTang_DIR="$prefix/lib/cmake/tang" \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++-22}" \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld >"$work/configure.log" ||
  { cat "$work/configure.log" >&2; exit 1; }
ninja -C "$work/consumer" >"$work/build.log" ||
  { cat "$work/build.log" >&2; exit 1; }
"$work/consumer/consumer" "$example" >"$work/consumer.mlir"

echo "[tang] running --tang-fuse through $MLIR_OPT with the installed plugin"
"$MLIR_OPT" --load-dialect-plugin="$prefix/lib/TangPlugin.so" \
  --load-pass-plugin="$prefix/lib/TangPlugin.so" \
  --pass-pipeline='builtin.module(tang-fuse)' "$example" >"$work/plugin.mlir"

grep -q "tang.comprehension" "$work/tang-opt.mlir" ||
  { echo "error: tang-opt printed no comprehension" >&2; exit 1; }
for f in consumer plugin; do
  if ! cmp -s "$work/tang-opt.mlir" "$work/$f.mlir"; then
    echo "error: the $f's fused program differs from tang-opt's:" >&2
    diff "$work/tang-opt.mlir" "$work/$f.mlir" >&2 || true
    exit 1
  fi
done
echo "[tang] installed package ok: tang-opt, the consumer and mlir-opt with" \
  "TangPlugin.so agree"

# The Python package: pip-installed (no network, no build isolation) into a
# scratch directory, it finds the installed tang-opt on PATH (nothing else:
# TANG_BIN and TANG_OPT unset, run from outside the source tree) and
# compiles and runs a function through the C backend.
echo "[tang] pip-installing python/ and running it against the installed tools"
/usr/bin/python3 -m pip install --quiet --no-build-isolation --no-index --no-deps \
  --target "$work/site" ./python >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log" >&2; exit 1; }
rm -rf python/build python/*.egg-info
(cd "$work" && env -u TANG_BIN -u TANG_OPT -u TANG_RUN \
   PATH="$prefix/bin:$PATH" PYTHONPATH="$work/site" \
   TANG_CACHE_DIR="$work/cache" /usr/bin/python3 - <<'PY'
import numpy as np
import tang
from tang import f32

assert tang.find_tool("tang-opt").parent.name == "bin", tang.find_tool("tang-opt")

@tang.function
def axpy(x: f32[8], y: f32[8]):
    return tang.compute((8,), lambda i: 2.0 * x[i] + y[i])

x = np.arange(8, dtype=np.float32)
y = np.ones(8, dtype=np.float32)
got = tang.compile(axpy)(x, y)
assert np.array_equal(got, 2 * x + y), got
print("[tang] python package ok:", tang.__version__, "via",
      tang.find_tool("tang-opt"))
PY
) || { echo "error: the pip-installed python package failed" >&2; exit 1; }
(cd "$work" && PATH="$prefix/bin:$PATH" PYTHONPATH="$work/site" \
   /usr/bin/python3 -m tang --version)
