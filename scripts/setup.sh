#!/usr/bin/env bash
# The README's first command: installs what tang needs, builds it, and runs
# tang's main job on a shipped example: parse, verify and canonicalise the
# pre-norm transformer block, then interpret it in float64 on seeded random
# inputs and print a summary of its output.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

echo "[tang] main job: tang-opt --canonicalize examples/transformer_block.mlir | tang-run"
build/bin/tang-opt --canonicalize examples/transformer_block.mlir \
  | build/bin/tang-run - --seed 0
echo "[tang] main job, from Python: examples/python/block.py"
/usr/bin/python3 examples/python/block.py
