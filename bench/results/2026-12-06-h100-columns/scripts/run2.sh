#!/bin/bash
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 bench/gpu_check.py > $OUT/gpu_check.log 2>&1; echo check rc=$?
tail -4 $OUT/gpu_check.log; grep -iE "fail|error|mismatch" $OUT/gpu_check.log | head -10
cp -f bench/results/gpu_check.json $OUT/ 2>/dev/null
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 gpu-work/blk/blk_san.py block_grad_L128 > $OUT/san-$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|block step|RACECHECK SUMMARY" $OUT/san-$tool.log | head -3
done
left=$(( 570 - SECONDS ))
timeout $left python3 bench/bench_block_grad.py --quick --cases block_grad_L2048 block_grad_L512 --profile block_grad_L2048 --out $OUT --deadline $(( $(date +%s) + left - 15 )) --compile-reserve-s 150 > $OUT/block.log 2>&1; echo block rc=$?
grep -E "^block_grad" $OUT/block.log | cut -c1-330
