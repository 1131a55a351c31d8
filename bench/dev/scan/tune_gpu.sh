#!/bin/bash
# One GPU call of the look-back tuning: every shape timed twice (interleaved with copy and CUB inside
# the harness), with ncu's speed-of-light, memory, occupancy and warp-stall sections on the default
# shape, CUB and one candidate at 2^28 int32 in between. Logs into $1.
set -u
O=${1:?usage: tune_gpu.sh OUTDIR [candidate method name]}
mkdir -p "$O"
cd "$(dirname "$0")/../../.."
gpu() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; }
echo "start: $(gpu)" > "$O/clocks.txt"
nvcc -std=c++17 -O3 -lineinfo -Inative -Xcompiler -fopenmp -gencode arch=compute_90,code=sm_90 \
  native/scan/*.cu bench/dev/scan/fast_variants.cu bench/dev/scan/scan_harness.cu -o /tmp/scan_harness > "$O/build.txt" 2>&1 || { cat "$O/build.txt"; exit 1; }
export OMP_NUM_THREADS=16
timeout 200 /tmp/scan_harness --time-only > "$O/time1.txt" 2>&1
echo "after run 1: $(gpu)" >> "$O/clocks.txt"
for m in fast cub "${2:-fast[64x256B]}"; do
  timeout 120 ncu --kernel-name regex:"scan_lookback|DeviceScanKernel" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section LaunchStats \
    /tmp/scan_harness --one "$m" 28 > "$O/ncu-$(echo "$m" | tr -c 'a-zA-Z0-9\n' _).txt" 2>&1
done
timeout 200 /tmp/scan_harness --time-only > "$O/time2.txt" 2>&1
echo "end: $(gpu)" >> "$O/clocks.txt"
cat "$O/clocks.txt"
for f in time1 time2; do echo "== $f"; grep -E "^time (int32|float32|float64) +2\^(28|30) " "$O/$f.txt"; done
