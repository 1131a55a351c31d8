#!/bin/bash
# Issue 19, the one H200 call (repo root of an unpacked gpu-pack tree): the package's benchmark twice
# back to back from the GPU as found at the machine's start, then the harness: correctness of the
# shipped configs, fast/DSYRK strictly alternating, memcheck on the tiny shapes.
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-out}
F=/tmp/ata-final; rm -rf "$F"; mkdir -p "$F" "$OUT"
S="$F/summary.txt"
say() { echo "$@" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv,noheader)"
SIZES=${CK_ATA_SIZES:-4000,6000,8000,10000,16000}
for r in 1 2; do
  say "bench run $r (sizes $SIZES): $(state)"
  CK_BENCH_ARGS="ata --sizes $SIZES" bash scripts/gpu-run.sh "$F/bench$r" bench > /dev/null 2>&1
  say "  $(tail -1 "$F/bench$r/summary.txt") end: $(state)"
done
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
  -lcublas -o /tmp/ata_h 2> "$F/ptxas.txt" || { grep -E "error" "$F/ptxas.txt" | head -30; exit 1; }
M=fast,v.large,v.small,v.large.nosplit
/tmp/ata_h --no-timing --methods $M,v4,cublasDsyrk+mirror,cublasDgemm > "$F/correct.log" 2>&1
say "harness correctness (shipped configs, every small and big shape): rc=$? $(tail -1 "$F/correct.log")"
say "harness alternating fast/DSYRK: $(state)"
/tmp/ata_h --no-big-check --gap-ms 0 --fixed-order --reps 9 --shapes 8000,10000,16000 --methods fast,cublasDsyrk+mirror > "$F/alt.log" 2>&1
say "  rc=$? $(tail -1 "$F/alt.log")"
timeout 100 compute-sanitizer --tool memcheck --leak-check full /tmp/ata_h --tiny --methods $M > "$F/memcheck.txt" 2>&1
say "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$F/memcheck.txt" | tr '\n' ' ') $(tail -1 "$F/memcheck.txt")"
say "end: $(state)"
for r in 1 2; do
  cp "$F/bench$r/bench.log" "$OUT/bench$r.log"
  cp "$F"/bench$r/results/*.json "$OUT/bench$r.json" 2>/dev/null
done
cp "$S" "$OUT/summary.txt"
tar -cJf "$OUT/rest.tar.xz" -C "$F" . 2>/dev/null
sed -n '/== table/,/^$/p' "$F/alt.log" | cut -c1-130
