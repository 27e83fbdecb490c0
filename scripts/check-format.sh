#!/usr/bin/env bash
# Fails when a tracked C++ source is not clang-format-22 clean (LLVM style,
# see .clang-format). Fix with: clang-format-22 -i <file>
set -euo pipefail
cd "$(dirname "$0")/.."

CF="$(command -v clang-format-22 || true)"
if [ -z "$CF" ]; then
  echo "[tang] format: clang-format-22 not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  "$CF" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find include lib tools -name '*.cpp' -o -name '*.h')
if [ ${#bad[@]} -ne 0 ]; then
  echo "[tang] format: not clang-format clean: ${bad[*]}" >&2
  echo "[tang] format: run clang-format-22 -i on them" >&2
  exit 1
fi
echo "[tang] format: all C++ sources are clang-format clean"
