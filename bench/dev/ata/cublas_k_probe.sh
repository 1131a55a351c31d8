#!/usr/bin/env bash
# The cases behind logs/h200-cublas-k-probe-per-case.log (`dgemm`/`dsyrk` below, H200) and
# logs/h100-cublas-k-probe-sgemm.log (`sgemm` and the last three, H100), one process each: a failed
# call can leave an illegal-address error that ends the context. A case killed by its 45 s timeout
# prints nothing, so the logs have no line for DSYRK n = 4 at k = 2^30 − 1 and 2^30, nor n = 1 at 2^30.
# Needs up to 69 GB of device memory (n·k·8 bytes; SGEMM twice that in float32).
#
# `long-m` (logs/h100-cublas-long-m-probe.log, H100): SGEMM with M up to INT_MAX, as Mlp's forward
# pass and backward deltas call it (M = the batch's rows, K and N small).
#
#   bash bench/dev/ata/cublas_k_probe.sh [which]     which: dsyrk-dgemm (default) | sgemm | long-m
set -uo pipefail
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
/usr/local/cuda/bin/nvcc -std=c++17 -O2 -o /tmp/cublas_k_probe bench/dev/ata/cublas_k_probe.cu -lcublas || exit 1
run() { timeout 45 /tmp/cublas_k_probe "$@" 2>&1 | tail -1; }
if [ "${1:-dsyrk-dgemm}" = long-m ]; then
  for m in 1073741824 1610612736 2147483647; do timeout 40 /tmp/cublas_k_probe sgemm-m 2 $m 2>&1 | tail -1; done
elif [ "${1:-dsyrk-dgemm}" = sgemm ]; then
  for k in 1073741824 1610612736 2000000000 2100000000 2147483647; do run sgemm 2 $k; done
  for k in 1073741824 2147483647; do run sgemm 4 $k; done
  for k in 268435456 536870912; do run sgemm 16 $k; done
  for k in 67108864 134217728; do run sgemm 64 $k; done
  run dgemm 2 2147483647
  run dgemm 1 1073741824
  run dsyrk 1 1073741824
else
  for k in 1800000000 2000000000 2100000000 2146435072 2147483647; do run dgemm 2 $k; done
  for k in 536870912 805306368 1073741823 1073741824 1610612736 2147483647; do run dgemm 4 $k; done
  for k in 268435456 536870911 536870912 1073741824; do run dgemm 8 $k; done
  for k in 134217728 268435456 536870912; do run dgemm 16 $k; done
  for k in 33554432 67108864 134217728; do run dgemm 64 $k; done
  for k in 16777216 33554432 67108864; do run dgemm 128 $k; done
  for k in 4194304 8500000; do run dgemm 1000 $k; done
  for k in 536870912 1073741823 1073741824; do run dsyrk 4 $k; done
  for k in 268435456 536870912; do run dsyrk 16 $k; done
  for k in 67108864 134217728; do run dsyrk 64 $k; done
  for k in 33554432 67108864; do run dsyrk 128 $k; done
  for k in 4194304 8500000; do run dsyrk 1000 $k; done
fi
