#!/bin/bash
cd "$(dirname "$0")/.."
for tool in memcheck racecheck synccheck initcheck; do
  timeout 120 compute-sanitizer --tool $tool --kernel-name kns=moe_layer --error-exitcode 9 python3 gpu-work/moe_san.py 1 8 64 > $OUT/san-$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|tokens|Error|error" $OUT/san-$tool.log | head -6
done
