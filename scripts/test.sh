#!/usr/bin/env bash
# The README's second command: installs what is missing, builds tang, and
# runs the whole test suite: the format check, the lit tests, then the NumPy
# tests.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

bash scripts/check-format.sh

BUILD_DIR="${TANG_BUILD_DIR:-build}"
echo "[tang] running check-tang"
ninja -C "$BUILD_DIR" check-tang
