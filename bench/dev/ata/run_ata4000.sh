#!/bin/bash
# Issue 19's last must, `fast` at 4000² (NOTES.md §10): where a 128-tile block's time goes, one GPU
# call. Run from a directory holding this script and the harness: either OBJ (ata_harness.cu compiled
# elsewhere with -c, linked here against cuBLAS in seconds) or the source tree (built here, ~70 s).
# Steps (STEPS, default "timeline time time2"): the per-block timeline at 4000², 8000², 10000²,
# 16000²; the interleaved timing (150 ms gaps, rotated, median of 7) of fast, the kernel with
# timestamps, without the mirror stores, without any stores, the epilogue alone and DSYRK+mirror at
# 4000² and 10000² and, for the K sweep, 2000×4000 and 8000×4000; time2 repeats it.
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata4k-out}
F=/tmp/ata4k; rm -rf "$F"; mkdir -p "$F" "$OUT"
S="$F/summary.txt"
STEPS=${STEPS:-timeline time time2}
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv,noheader); commit ${COMMIT:-?}"
H=/tmp/ata_h
if [ -n "${OBJ:-}" ]; then
  nvcc -o $H "$OBJ" -lcublas > "$F/build.txt" 2>&1 || { cat "$F/build.txt"; exit 1; }
else
  nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
    -lcublas -o $H 2> "$F/build.txt" || { grep -E "error" "$F/build.txt" | head -30; exit 1; }
fi
say "harness ready"
if has timeline; then
  say "timeline: $(state)"
  $H --small --methods fast --timeline ${TL_SHAPES:-4000,8000,10000,16000} > "$F/timeline.log" 2>&1
  say "  rc=$? $(tail -1 "$F/timeline.log")"
fi
M=${TIME_M:-fast,probe.timed,probe.nomirror,probe.nostore,probe.epionly,v.large.nosplit,cublasDsyrk+mirror}
for step in time time2; do
  has $step || continue
  say "$step: harness timing, 150 ms gaps, rotated: $(state)"
  timeout ${TIME_T:-200} $H --no-big-check --methods $M --shapes ${TIME_SHAPES:-4000,10000,2000x4000,8000x4000} > "$F/$step.log" 2>&1
  say "  rc=$? $(tail -1 "$F/$step.log")"
done
say "end: $(state)"
cp "$S" "$OUT/summary.txt"
for l in timeline time time2; do [ -f "$F/$l.log" ] && cp "$F/$l.log" "$OUT/$l.log"; done
grep -vE "^kernel|^plan|PASS$" "$F/timeline.log" 2>/dev/null | head -80
for l in time time2; do [ -f "$F/$l.log" ] && sed -n '/== table/,/^$/p' "$F/$l.log" | cut -c1-125; done
true
