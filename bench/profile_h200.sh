set -x
(cmake -G Ninja -S runtime/cuda -B build-rt > $OUT/rt_build.log 2>&1 && ninja -C build-rt >> $OUT/rt_build.log 2>&1) ; echo "rt build rc=$?"
TANG_CUDA_RUN=$PWD/build-rt/tang-cuda-run timeout 200 python3 -m pytest -q -p no:cacheprovider test/Runtime -rs > $OUT/runtime_tests.log 2>&1; echo "runtime tests rc=$?"; tail -4 $OUT/runtime_tests.log
for c in softmax_32768x4096 layernorm_32768x4096 gemv_4096x4096; do
  timeout 150 ncu --clock-control none --kernel-name main_k0 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats python3 bench/bench_memory_bound.py --cases $c --reps 5 --warmup 1 --budget-s 0 > $OUT/ncu_$c.log 2>&1; echo "ncu $c rc=$?"
  grep -E "Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Duration|Achieved Occupancy|Registers Per|Theoretical Occupancy|Block Limit" $OUT/ncu_$c.log | head -12
done
