#!/bin/bash
# One device call: build, harness (correctness + timing), optionally ncu (PROFILE=1) and the
# sanitizers on small shapes (SANITIZE=1). Usage (repo root): bash bench/dev/ata/run_gpu.sh [harness flags]
set -o pipefail
OUT=${OUT:-/tmp/ata-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu -lcublas \
  -o /tmp/ata_h 2> "$OUT/ptxas.txt" || { grep -E "error" "$OUT/ptxas.txt" | head -30; exit 1; }
echo "SASS tensor ops:"; cuobjdump --dump-sass /tmp/ata_h | grep -oE 'DMMA[.0-9A-Za-z]*' | sort | uniq -c
/tmp/ata_h "$@" > "$OUT/ata.log" 2>&1; rc=$?
if [ -n "$PROFILE" ]; then
  timeout 80 ncu --clock-control none --metrics \
sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_dmma.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
lts__t_bytes.sum,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,\
smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,\
smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,\
smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct \
    /tmp/ata_h --profile > "$OUT/ncu_metrics.txt" 2>&1
  echo "ncu metrics rc=$?"
fi
if [ -n "$SANITIZE" ]; then
  timeout 150 compute-sanitizer --tool memcheck --leak-check full /tmp/ata_h --tiny --variants > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$OUT/memcheck.txt" | tr '\n' ' ')"
  timeout 240 compute-sanitizer --tool racecheck /tmp/ata_h --tiny --variants > "$OUT/racecheck.txt" 2>&1
  echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.txt" | tr '\n' ' ')"
fi
grep -E "^kernel|^plan|^device" "$OUT/ata.log"
grep -E "FAIL|ERROR" "$OUT/ata.log" | head -40
sed -n '/== table/,$p' "$OUT/ata.log"
echo "harness rc=$rc"
