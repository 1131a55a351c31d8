#!/bin/bash
# Issue 19, final call (repo root of an unpacked gpu-pack tree, on the GPU host):
#   1-2. the package's own benchmark twice back to back on the GPU as found (cold at the machine's
#        start), through scripts/gpu-run.sh's bench step, each with the GPU state at start and end;
#   3. the package's ata tests; 4. the harness: fast/DSYRK strictly alternating, correctness of every
#   variant, memcheck and racecheck of the shipped configs on the tiny shapes.
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-out}
F=/tmp/ata-final; rm -rf "$F"; mkdir -p "$F" "$OUT"
S="$F/summary.txt"
say() { echo "$@" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader)"
SIZES=${CK_ATA_SIZES:-2000,4000,6000,8000,10000,12000,16000}
for r in 1 2; do
  say "bench run $r (sizes $SIZES): $(state)"
  CK_BENCH_ARGS="ata --sizes $SIZES" bash scripts/gpu-run.sh "$F/bench$r" bench > /dev/null 2>&1
  say "  $(tail -1 "$F/bench$r/summary.txt") end: $(state)"
done
say "jest test/ata: $(state)"
CK_JEST_ARGS="test/ata" bash scripts/gpu-run.sh "$F/test" test > /dev/null 2>&1
say "  $(grep jest "$F/test/summary.txt")"
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
  -lcublas -o /tmp/ata_h 2> "$F/ptxas.txt" || { grep -E "error" "$F/ptxas.txt" | head -30; exit 1; }
say "harness alternating fast/DSYRK: $(state)"
/tmp/ata_h --no-big-check --gap-ms 0 --fixed-order --reps 9 --shapes 8000,10000,16000 --methods fast,cublasDsyrk+mirror > "$F/alt.log" 2>&1
say "  rc=$? $(tail -1 "$F/alt.log")"
/tmp/ata_h --no-big-check --gap-ms 150 --reps 5 --shapes 2000,3000,200000x2000 --methods fast,v6.small,v6.small.noskip,v4.small,cublasDsyrk+mirror > "$F/small.log" 2>&1
say "harness small configs rc=$? $(tail -1 "$F/small.log")"
/tmp/ata_h --no-timing --variants > "$F/correct.log" 2>&1
say "harness correctness, every variant: rc=$? $(tail -1 "$F/correct.log")"
M=fast,v.large,v.small,v.large.nosplit
timeout 100 compute-sanitizer --tool memcheck --leak-check full /tmp/ata_h --tiny --methods $M > "$F/memcheck.txt" 2>&1
say "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$F/memcheck.txt" | tr '\n' ' ') $(tail -1 "$F/memcheck.txt")"
timeout ${RC_T:-230} compute-sanitizer --tool racecheck /tmp/ata_h --tiny --methods $M > "$F/racecheck.txt" 2>&1
say "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$F/racecheck.txt" | tr '\n' ' ')"
say "end: $(state)"
# At most 8 files come back, 2 folders deep: the bench results and logs, the summary, a tar of the rest.
for r in 1 2; do
  cp "$F/bench$r/bench.log" "$OUT/bench$r.log"
  cp "$F"/bench$r/results/*.json "$OUT/bench$r.json" 2>/dev/null
done
cp "$S" "$OUT/summary.txt"
tar -cJf "$OUT/rest.tar.xz" -C "$F" . 2>/dev/null
for f in "$F"/alt.log "$F"/small.log; do echo "--- $f"; sed -n '/== table/,/^$/p' "$f" | cut -c1-130; done
