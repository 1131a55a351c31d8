#!/bin/bash
# Build and run everything on the GPU host; logs go to $OUT.
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/scan_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/gpu.txt" 2>&1
( time nvcc -std=c++17 -O3 -lineinfo -Inative -Xcompiler -fopenmp -gencode arch=compute_90,code=sm_90 \
    native/scan/*.cu bench/dev/scan/fast_variants.cu bench/dev/scan/scan_harness.cu -o /tmp/scan_harness ) > "$OUT/build.txt" 2>&1 || { cat "$OUT/build.txt"; exit 1; }
export OMP_NUM_THREADS=16
timeout ${T_MAIN:-150} /tmp/scan_harness ${HARNESS_ARGS:-} 2>&1 | tee "$OUT/harness_log.txt" | grep -v "^checked\|^time " | tail -80
[ "${NO_SAN:-0}" = 1 ] && exit 0
echo "== memcheck"; timeout ${T_SAN:-40} compute-sanitizer --tool memcheck --print-limit 20 /tmp/scan_harness --small > "$OUT/memcheck.txt" 2>&1; echo "rc=$?"; tail -4 "$OUT/memcheck.txt"
echo "== racecheck"; timeout ${T_SAN:-40} compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 20 /tmp/scan_harness --san > "$OUT/racecheck.txt" 2>&1; echo "rc=$?"; tail -4 "$OUT/racecheck.txt"
