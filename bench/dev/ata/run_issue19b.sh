#!/bin/bash
# Issue 19, second call: v6 (interleaved + lean copy, idle lower warps) against v4 and DSYRK under
# each protocol, with the SM clock and power per run; ncu of v4 / v6.
# Usage (repo root, on the GPU host): OUT=dir bash bench/dev/ata/run_issue19b.sh
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-out}
X=$OUT/y; mkdir -p "$X"
S="$X/summary.txt"
say() { echo "$@" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader)"
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
  -lcublas -o /tmp/ata_h 2> "$X/ptxas.txt" || { grep -E "error" "$X/ptxas.txt" | head -30; exit 1; }
K=_ZN2ck3ata6detail18ata_mma_sym_kernelINS1_10FastConfigILi128E
cuobjdump -sass -fun ${K}Li4ELi4ELi32ELi3ELNS1_8MmaShapeE1ELi4ELb1ELi1ELb1ELb1ELb1ELb1EEELb1EEEvPKdPdS8_lliil /tmp/ata_h 2>&1 | xz -9 > "$X/sass-v6.txt.xz"
H="$X/harness.log"
run() { local name=$1; shift; say "$name: $(state)"; /tmp/ata_h "$@" > "$X/$name.log" 2>&1; say "  rc=$? $(tail -1 "$X/$name.log")"; }
run correct --no-timing --variants
B="--no-big-check --gap-ms 0 --fixed-order --reps 9 --shapes 8000,10000,16000"
run p2_v4_alt $B --methods v4,cublasDsyrk+mirror
run p2_v6_alt $B --methods fast,cublasDsyrk+mirror
run p2_v4_alt_again $B --methods v4,cublasDsyrk+mirror
run p2_v6_alt_again $B --methods fast,cublasDsyrk+mirror
run p1_pkgorder --no-big-check --gap-ms 0 --fixed-order --reps 7 --methods cublasDgemm,cublasDsyrk+mirror,tiled,fast --shapes 4000,6000,8000,10000,12000,16000
run p3_gap --no-big-check --gap-ms 150 --reps 7 --methods v4,v5.16w.ilv,v6.noskip,fast,cublasDsyrk+mirror,cublasDgemm --shapes 4000,6000,8000,10000,16000
run p3_small_gap --no-big-check --gap-ms 150 --reps 7 --methods fast,v.small,v6.small,v4,cublasDsyrk+mirror,cublasDgemm --shapes 2000,3000,1000000x64,200000x2000
say "ncu: $(state)"
timeout 120 ncu --clock-control none --metrics \
sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_dmma.sum,\
sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,\
smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
sm__cycles_elapsed.avg,sm__cycles_active.avg \
  /tmp/ata_h --profile --methods v4,v6.noskip,fast,v.small,v6.small > "$X/ncu.txt" 2>&1
say "  ncu rc=$?"
say "end: $(state)"
for f in p2_v4_alt p2_v6_alt p2_v4_alt_again p2_v6_alt_again p1_pkgorder p3_gap p3_small_gap; do echo "--- $f"; sed -n '/== table/,/^$/p' "$X/$f.log" | cut -c1-120; done
grep -E "FAIL|ERROR" "$X/correct.log" | head
