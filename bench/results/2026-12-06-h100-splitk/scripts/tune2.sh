#!/bin/bash
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 bench/tune.py measure --cases matmul_1000 matmul_1536 linear_gelu_1000x1000x1000 --out $OUT/tune --budget-s 150 > $OUT/tune.log 2>&1; echo tune rc=$?
tail -12 $OUT/tune.log
