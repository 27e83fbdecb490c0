#!/usr/bin/env bash
# Builds tang instrumented for fuzzing (ASan + UBSan + libFuzzer coverage)
# into build-fuzz/ and runs the fuzz target tools/tang-fuzz (parse, verify,
# tang's target-independent passes) for a time budget, seeded with every
# example and test input (plus test/Fuzz/corpus, the inputs that once
# crashed it, each a regression test), then tools/tang-fuzz-lower (the
# portable pipelines with their printers and the CUDA kernel form) from the
# same seeds and tools/tang-fuzz-runtime (the host runtimes' .npy reader
# and manifest parser, sizes and index checks), each for half that budget,
# the latter seeded with test/Fuzz/runtime. A crash stops it
# with the input saved under build-fuzz/findings/ and a non-zero exit.
#
# Usage: bash scripts/fuzz.sh [seconds]      (default 120; TANG_JOBS as build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET="${1:-120}"
BUILD_DIR=build-fuzz
JOBS="${TANG_JOBS:-$(nproc)}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "[tang] configuring $BUILD_DIR (ASan, UBSan, libFuzzer)"
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release -DTANG_FUZZ=ON \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld >/dev/null
fi
echo "[tang] building $BUILD_DIR tang-fuzz tang-fuzz-lower tang-fuzz-runtime (-j$JOBS)"
ninja -C "$BUILD_DIR" -j"$JOBS" tang-fuzz tang-fuzz-lower tang-fuzz-runtime

# The seed corpus: every .mlir of examples/ and test/ (one file each).
seeds="$BUILD_DIR/seeds"
rm -rf "$seeds" && mkdir -p "$seeds" "$BUILD_DIR/corpus" "$BUILD_DIR/findings"
find examples test -name '*.mlir' -print0 | while IFS= read -r -d '' f; do
  cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"
done
# Regression inputs: each once crashed the target; they must run clean.
if compgen -G "test/Fuzz/corpus/*" >/dev/null; then
  echo "[tang] fuzz regressions: $(ls test/Fuzz/corpus | wc -l) inputs"
  "$BUILD_DIR/bin/tang-fuzz" -runs=0 test/Fuzz/corpus 2>&1 | tail -1
  ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0:detect_container_overflow=0 \
    "$BUILD_DIR/bin/tang-fuzz-lower" -runs=0 test/Fuzz/corpus 2>&1 | tail -1
fi
# run_fuzzer TARGET SECONDS LOG ASAN_OPTIONS [libFuzzer arguments...]: runs
# a target for SECONDS with the shared settings; a finding stops the script.
run_fuzzer() {
  local target=$1 budget=$2 log=$3 asan=$4
  shift 4
  set +e
  ASAN_OPTIONS="$asan" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$BUILD_DIR/bin/$target" -max_total_time="$budget" \
    -seed="${TANG_FUZZ_SEED:-1}" \
    -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$BUILD_DIR/findings/" "$@" >"$log" 2>&1
  local rc=$?
  set -e
  grep -E "stat::number_of_executed_units|stat::new_units_added|stat::peak_rss" \
    "$log" || true
  if [ $rc -ne 0 ]; then
    echo "[tang] $target found a failure (exit $rc):" >&2
    grep -E "ERROR|runtime error|Assertion|deadly signal|timeout" "$log" \
      | head -5 >&2
    ls "$BUILD_DIR/findings" >&2
    exit 1
  fi
}

# A budget of 0 builds and runs the regressions only (libFuzzer reads
# -max_total_time=0 as no limit).
if [ "$SECONDS_BUDGET" -le 0 ]; then
  echo "[tang] fuzzing: budget 0, built and regressions run only"
  exit 0
fi
echo "[tang] fuzzing for ${SECONDS_BUDGET} s from $(ls "$seeds" | wc -l) seeds"
# libMLIR.so is not instrumented: the allocator poisoning that LLVM headers
# compile into tang's instrumented code would flag its memory (false
# "use-after-poison"), so manual poisoning is off.
run_fuzzer tang-fuzz "$SECONDS_BUDGET" "$BUILD_DIR/fuzz.log" \
  detect_leaks=0:allow_user_poisoning=0:detect_container_overflow=0 \
  -dict=test/Fuzz/tang.dict "$BUILD_DIR/corpus" "$seeds"
echo "[tang] fuzzing: no crash in ${SECONDS_BUDGET} s"

# The lowerings: every pipeline of a portable backend (with its printer)
# and the CUDA kernel form, on each input that verifies: six pipelines an
# input, seconds for the largest seeds under ASan, so a unit may take 60 s
# before it is a finding, and the fusion stress inputs (test/Transforms/
# Inputs/adversarial: fusion's work bounds at their limits, 15 s a unit
# here) are left to tang-fuzz.
LOWER_SECONDS=$(( (SECONDS_BUDGET + 1) / 2 ))
lower_seeds="$BUILD_DIR/seeds-lower"
rm -rf "$lower_seeds" && cp -r "$seeds" "$lower_seeds"
rm -f "$lower_seeds"/*adversarial*
echo "[tang] fuzzing the lowerings for ${LOWER_SECONDS} s from $(ls "$lower_seeds" | wc -l) seeds"
mkdir -p "$BUILD_DIR/corpus-lower"
run_fuzzer tang-fuzz-lower "$LOWER_SECONDS" "$BUILD_DIR/fuzz-lower.log" \
  detect_leaks=0:allow_user_poisoning=0:detect_container_overflow=0 \
  -timeout=60 -dict=test/Fuzz/tang.dict "$BUILD_DIR/corpus-lower" \
  "$lower_seeds"
echo "[tang] fuzzing the lowerings: no crash in ${LOWER_SECONDS} s"

# The runtimes' readers: .npy files and manifests (a manifest's text, a NUL,
# then bytes that choose sizes and fill index inputs).
RUNTIME_SECONDS=$(( (SECONDS_BUDGET + 1) / 2 ))
echo "[tang] fuzzing the runtimes' readers for ${RUNTIME_SECONDS} s from $(ls test/Fuzz/runtime | wc -l) seeds"
mkdir -p "$BUILD_DIR/corpus-runtime"
run_fuzzer tang-fuzz-runtime "$RUNTIME_SECONDS" "$BUILD_DIR/fuzz-runtime.log" \
  detect_leaks=0 "$BUILD_DIR/corpus-runtime" test/Fuzz/runtime
echo "[tang] fuzzing the runtimes' readers: no crash in ${RUNTIME_SECONDS} s"
