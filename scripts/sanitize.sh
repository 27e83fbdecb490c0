#!/usr/bin/env bash
# The lit suite and the interpreter's NumPy tests against tang built with
# ASan and UBSan (build-fuzz/, configured by scripts/fuzz.sh): any report
# of either fails the run. libMLIR.so is not instrumented (see fuzz.sh for
# why manual poisoning is off).
#
# Usage: bash scripts/sanitize.sh        (TANG_JOBS as build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-fuzz
JOBS="${TANG_JOBS:-$(nproc)}"
[ -f "$BUILD_DIR/build.ninja" ] || { bash scripts/fuzz.sh 0 >/dev/null; }
echo "[tang] building the sanitized tools in $BUILD_DIR (-j$JOBS)"
ninja -C "$BUILD_DIR" -j"$JOBS" tang-opt tang-run tang-translate
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0:detect_container_overflow=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
# Not Plugin/ (an instrumented plugin cannot load into the uninstrumented
# mlir-opt) nor Docs/ (the generated docs are not built here).
echo "[tang] lit against the ASan+UBSan tools"
/usr/lib/llvm-22/bin/lit -sv --filter-out "Plugin/|Docs/" "$BUILD_DIR/test"
echo "[tang] the interpreter's NumPy tests against the ASan+UBSan tools"
TANG_BIN="$PWD/$BUILD_DIR/bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  test/Interpreter test/Examples/test_examples.py
echo "[tang] sanitizers: no report"
