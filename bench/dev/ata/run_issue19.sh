#!/bin/bash
# Issue 19, exploration call: build the harness, correctness of every variant on the small shapes,
# then the protocols side by side with the SM clock and power recorded per run, then ncu.
# Usage (repo root, on the GPU host): OUT=dir bash bench/dev/ata/run_issue19.sh
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-out}
X=$OUT/x; mkdir -p "$X"
S="$X/summary.txt"
say() { echo "$@" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv,noheader)"
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
  -lcublas -o /tmp/ata_h 2> "$X/ptxas.txt" || { grep -E "error" "$X/ptxas.txt" | head -30; exit 1; }
K=_ZN2ck3ata6detail18ata_mma_sym_kernelINS1_10FastConfigILi128E
{ for f in ${K}Li4ELi4ELi32ELi3ELNS1_8MmaShapeE1ELi4ELb1ELi1ELb1ELb0EEELb1EEEvPKdPdS8_lliil \
           ${K}Li4ELi4ELi32ELi3ELNS1_8MmaShapeE1ELi4ELb1ELi1ELb1ELb1EEELb1EEEvPKdPdS8_lliil \
           ${K}Li2ELi4ELi32ELi3ELNS1_8MmaShapeE1ELi4ELb1ELi1ELb1ELb0EEELb1EEEvPKdPdS8_lliil; do
    echo "=== $f"; cuobjdump -sass -fun "$f" /tmp/ata_h; done; } > "$X/sass.txt" 2>&1
xz -9 "$X/sass.txt"
/tmp/ata_h --small --variants > "$X/correct.log" 2>&1
say "correctness (small shapes, every variant): rc=$? $(tail -1 "$X/correct.log")"
V=fast,v3.pipe8w,v5.8w32x64k4,v5.8w64x32k8,v5.16w.bk16s6,v5.16w.ilv,v5.8w64x32.ilv,v5.8w32x64.ilv
SH=8000,10000,16000
say "P1 package order, back to back: $(state)"
/tmp/ata_h --no-big-check --gap-ms 0 --fixed-order --reps 7 --methods cublasDgemm,cublasDsyrk+mirror,tiled,fast --shapes $SH > "$X/p1_pkgorder_b2b.log" 2>&1
say "  rc=$? $(tail -1 "$X/p1_pkgorder_b2b.log")"
say "P2 fast/DSYRK alternating, back to back: $(state)"
/tmp/ata_h --no-big-check --gap-ms 0 --fixed-order --reps 9 --methods fast,cublasDsyrk+mirror --shapes $SH > "$X/p2_alt_b2b.log" 2>&1
say "  rc=$? $(tail -1 "$X/p2_alt_b2b.log")"
say "P3 variants, 150 ms gap, rotated: $(state)"
/tmp/ata_h --no-big-check --gap-ms 150 --reps 7 --methods $V,cublasDsyrk+mirror,cublasDgemm --shapes $SH > "$X/p3_var_gap.log" 2>&1
say "  rc=$? $(tail -1 "$X/p3_var_gap.log")"
say "P4 variants, back to back, rotated: $(state)"
/tmp/ata_h --no-big-check --gap-ms 0 --reps 7 --methods $V,cublasDsyrk+mirror,cublasDgemm --shapes $SH > "$X/p4_var_b2b.log" 2>&1
say "  rc=$? $(tail -1 "$X/p4_var_b2b.log")"
say "ncu: $(state)"
timeout 150 ncu --clock-control none --metrics \
sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_dmma.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
lts__t_bytes.sum,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,\
smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,\
smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,\
smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,\
smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active \
  /tmp/ata_h --profile --methods $V,cublasDsyrk+mirror > "$X/ncu.txt" 2>&1
say "  ncu rc=$?"
say "end: $(state)"
for f in p1_pkgorder_b2b p2_alt_b2b p3_var_gap p4_var_b2b; do echo "--- $f"; sed -n '/== table/,$p' "$X/$f.log"; done
