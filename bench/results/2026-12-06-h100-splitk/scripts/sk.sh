#!/bin/bash
# Split-k: tune the four small GEMMs, bench the 33x264x4104 heuristic
# (17 splits) against cuBLAS, compute-sanitizer on it.
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 bench/tune.py measure --cases linear_gelu_33x264x4104 matmul_1000 matmul_1536 linear_gelu_1000x1000x1000 --out $OUT/tune --budget-s 150 > $OUT/tune.log 2>&1; echo tune rc=$?
tail -25 $OUT/tune.log
timeout 120 python3 bench/bench_gemm.py --quick --cases linear_gelu_33x264x4104 linear_gelu_33x264x4104_cached --out $OUT > $OUT/gemm.log 2>&1; echo gemm rc=$?
grep -E "linear_gelu|cublas|ratio" $OUT/gemm.log | head -12
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 gpu-work/sk/sk_san.py > $OUT/san-$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|split-k|RACECHECK SUMMARY" $OUT/san-$tool.log | head -3
done
