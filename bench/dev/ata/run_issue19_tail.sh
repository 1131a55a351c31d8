#!/bin/bash
# Issue 19, second round (the tail split, NOTES.md §9), one call on a GPU (repo root of an unpacked
# gpu-pack tree): the package's benchmark twice back to back from the GPU as found (the must's
# protocol), then the harness: every method and variant for correctness, the interleaved timing of
# fast (tail split), v6.fast (the kernel before, no tail split), DSYRK+mirror, DGEMM and the
# whole-wave probes, fast/DSYRK strictly alternating, and memcheck over the tiny shapes.
# STEPS (default "bench correct time alt memcheck") picks steps; jest, sweep, pkgab, racecheck are
# extra steps (the H100 call: STEPS="bench jest racecheck time sweep pkgab").
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-out}
F=/tmp/ata-tail; rm -rf "$F"; mkdir -p "$F" "$OUT"
S="$F/summary.txt"
STEPS=${STEPS:-bench correct time alt memcheck}
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv,noheader); commit $(cat .gpu-bundle/commit 2>/dev/null)"
SIZES=${CK_ATA_SIZES:-4000,6000,8000,10000,16000}
if has bench; then
  for r in 1 2; do
    say "bench run $r (sizes $SIZES): $(state)"
    CK_BENCH_ARGS="ata --sizes $SIZES" bash scripts/gpu-run.sh "$F/bench$r" bench > /dev/null 2>&1
    say "  $(tail -1 "$F/bench$r/summary.txt") end: $(state)"
    grep -E "│ (cublas-syrk|fast) " "$F/bench$r/bench.log" | tee -a "$S"
  done
fi
if has jest; then
  CK_JEST_ARGS="test/ata.test.ts test/property.test.ts -t ata" timeout ${JEST_T:-150} bash scripts/gpu-run.sh "$F/jest" test > /dev/null 2>&1
  say "jest: $(tail -1 "$F/jest/summary.txt")"
  [ -f "$F/jest/test.log" ] && tail -8 "$F/jest/test.log" | tee -a "$S"
fi
nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
  -lcublas -o /tmp/ata_h 2> "$F/ptxas.txt" || { grep -E "error" "$F/ptxas.txt" | head -30; exit 1; }
say "harness built"
if has correct; then
  /tmp/ata_h --no-timing --variants > "$F/correct.log" 2>&1
  say "harness correctness (--variants, every shape): rc=$? $(grep -c ' PASS$' "$F/correct.log") PASS lines, $(tail -1 "$F/correct.log")"
  grep -E "^kernel|^plan" "$F/correct.log" | tee -a "$S" > /dev/null
fi
M=${TIME_M:-fast,v6.fast,cublasDsyrk+mirror,cublasDgemm,probe.wholewaves,probe.wholewaves.tailkernel}
if has time; then
  say "harness timing, 150 ms gaps, rotated: $(state)"
  timeout ${TIME_T:-200} /tmp/ata_h ${HARNESS_FLAGS:-} --no-big-check --methods $M --shapes ${CK_TIME_SHAPES:-4000,6000,8000,10000,16000,200000x2000} > "$F/timing.log" 2>&1
  say "  rc=$? $(tail -1 "$F/timing.log")"
fi
# The tail's piece count at 8000² (the partial wave's 36 tiles in 2, 3, 4 pieces), pool kept.
if has sweep; then
  say "harness tail-piece sweep: $(state)"
  /tmp/ata_h --no-big-check --methods v6.fast,v.large.rest2.keeppool,v.large.rest3.keeppool,v.large.rest4.keeppool,probe.wholewaves --shapes 8000 > "$F/sweep.log" 2>&1
  say "  rc=$? $(tail -1 "$F/sweep.log")"
fi
# The package benchmark's order (DGEMM, DSYRK, tiled, fast) back to back, fast and v6.fast each
# right after tiled, pool kept: an A/B in the must's protocol.
if has pkgab; then
  say "harness package-order A/B: $(state)"
  /tmp/ata_h ${HARNESS_FLAGS:-} --no-big-check --gap-ms 0 --fixed-order --reps 10 --shapes ${PKGAB_SHAPES:-6000,8000} \
    --methods ${PKGAB_M:-cublasDgemm,cublasDsyrk+mirror,tiled,fast.keeppool,tiled,v6.fast.keeppool} > "$F/pkgab.log" 2>&1
  say "  rc=$? $(tail -1 "$F/pkgab.log")"
fi
if has alt; then
  say "harness alternating fast/v6.fast/DSYRK back to back: $(state)"
  /tmp/ata_h --no-big-check --gap-ms 0 --fixed-order --reps 9 --shapes 6000,8000 --methods fast,cublasDsyrk+mirror,v6.fast,cublasDsyrk+mirror > "$F/alt.log" 2>&1
  say "  rc=$? $(tail -1 "$F/alt.log")"
fi
TM=fast,v.large,v.small,v.large.tail3,v.small.tail3,v.large.tail40
if has memcheck; then
  timeout ${MC_T:-150} compute-sanitizer --tool memcheck --leak-check full /tmp/ata_h --tiny --methods $TM > "$F/memcheck.txt" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$F/memcheck.txt" | tr '\n' ' ') $(tail -1 "$F/memcheck.txt")"
fi
if has racecheck; then
  timeout ${RC_T:-200} compute-sanitizer --tool racecheck /tmp/ata_h --tiny --methods ${RC_M:-v.large.tail3,v.small.tail3} > "$F/racecheck.txt" 2>&1
  say "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$F/racecheck.txt" | tr '\n' ' ') $(tail -1 "$F/racecheck.txt")"
fi
say "end: $(state)"
for r in 1 2; do
  [ -f "$F/bench$r/bench.log" ] && cp "$F/bench$r/bench.log" "$OUT/bench$r.log"
  for j in "$F"/bench$r/results/*.json; do [ -f "$j" ] && cp "$j" "$OUT/bench$r.json"; done
done
[ -f "$F/timing.log" ] && cp "$F/timing.log" "$OUT/timing.log"
cp "$S" "$OUT/summary.txt"
tar -cJf "$OUT/rest.tar.xz" -C "$F" --exclude='bench?/results' . 2>/dev/null
[ -f "$F/timing.log" ] && sed -n '/== table/,/^$/p' "$F/timing.log" | cut -c1-130
for l in alt sweep pkgab; do [ -f "$F/$l.log" ] && sed -n '/== table/,/^$/p' "$F/$l.log" | cut -c1-130; done
true
