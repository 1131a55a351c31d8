#!/bin/bash
# Shows that the checks of the persistent kernel can fail: a harness built with -DCK_SCAN_SELFTEST
# has a shape whose look-back warp announces the prefix 1 µs before writing it; the harness's checks
# and racecheck must both report it. Then ncu's speed-of-light and warp stalls of `fast` at 2^28.
#   bash selftest_gpu.sh HARNESS OUTDIR
set -u
H=${1:?usage: selftest_gpu.sh HARNESS OUTDIR}
O=${2:?usage: selftest_gpu.sh HARNESS OUTDIR}
mkdir -p "$O"
export OMP_NUM_THREADS=16 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > "$O/clocks.txt"
CK_SCAN_ONLY=SELFTEST timeout 60 "$H" --small > "$O/selftest-check.txt" 2>&1
echo "checks of the racy shape: rc=$? $(grep -c FAIL "$O/selftest-check.txt") FAIL lines; $(grep -E '^correctness' "$O/selftest-check.txt")"
CK_SCAN_ONLY=SELFTEST timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 10 "$H" --san > "$O/selftest-racecheck.txt" 2>&1
echo "racecheck of the racy shape: rc=$? $(grep -E 'RACECHECK SUMMARY' "$O/selftest-racecheck.txt")"
timeout 120 ncu --kernel-name regex:scan_persistent --launch-skip 1 --launch-count 1 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats "$H" --one fast 28 > "$O/ncu-fast.txt" 2>&1
echo "ncu rc=$?"; grep -E "DRAM Throughput|Memory Throughput|Achieved Occupancy|Duration" "$O/ncu-fast.txt" | head
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$O/clocks.txt"
