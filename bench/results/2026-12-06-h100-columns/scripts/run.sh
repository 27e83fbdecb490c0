#!/bin/bash
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 60 python3 gpu-work/blk/copy_sizes.py 2>&1 | tee $OUT/copy_sizes.log
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 gpu-work/blk/blk_san.py block_grad_L128 > $OUT/san-$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|block step|RACECHECK SUMMARY" $OUT/san-$tool.log | head -3
done
left=$(( 560 - SECONDS ))
timeout $left python3 bench/bench_block_grad.py --quick --profile block_grad_L2048 --out $OUT --deadline $(( $(date +%s) + left - 20 )) --compile-reserve-s 200 > $OUT/block.log 2>&1; echo block rc=$?
grep -E "block_grad|ratio|peer" $OUT/block.log | cut -c1-300 | head -20
