#!/bin/bash
# Issue 19's last must, `fast` at 4000² (NOTES.md §10): where a 128-tile block's time goes, one GPU
# call. Run from a directory holding this script and the harness: either OBJ (ata_harness.cu compiled
# elsewhere with -c, linked here against cuBLAS in seconds) or the source tree (built here, ~70 s).
# Steps (STEPS, default "timeline time time2"; call 2 of §10: "correct hostplan timeline time time2
# pkgab memcheck racecheck"; call 3: "bench jest correctall time time2 memcheck racecheck", from an
# unpacked gpu-pack tree): the package benchmark twice (bench); test/ata and the property tests
# (jest); every method and variant on every shape (correctall); correctness of fast and the lever's variants (--variants shapes, small and
# big); host cost of launchFast's planning; the per-block timeline (FastLarge90 and LargeBulk); the
# interleaved timing (150 ms gaps, rotated, median of 7, pool kept) of TIME_M at TIME_SHAPES, twice; the
# package benchmark's order back to back (pkgab); memcheck and racecheck over --tiny.
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
if has bench; then  # the package benchmark twice back to back, the must's protocol (needs the gpu-pack tree)
  for r in 1 2; do
    say "bench run $r (sizes ${CK_ATA_SIZES:-4000,6000,8000}): $(state)"
    CK_BENCH_ARGS="ata --sizes ${CK_ATA_SIZES:-4000,6000,8000}" bash scripts/gpu-run.sh "$F/bench$r" bench > /dev/null 2>&1
    say "  $(tail -1 "$F/bench$r/summary.txt") end: $(state)"
    grep -E "│ (cublas-syrk|fast) " "$F/bench$r/bench.log" | tee -a "$S"
    [ -f "$F/bench$r/bench.log" ] && cp "$F/bench$r/bench.log" "$OUT/bench$r.log"
    for j in "$F"/bench$r/results/*.json; do [ -f "$j" ] && cp "$j" "$OUT/bench$r.json"; done
  done
fi
if has jest; then
  CK_JEST_ARGS="test/ata.test.ts test/property.test.ts -t ata" timeout ${JEST_T:-200} bash scripts/gpu-run.sh "$F/jest" test > /dev/null 2>&1
  say "jest: $(tail -1 "$F/jest/summary.txt")"
  [ -f "$F/jest/test.log" ] && cp "$F/jest/test.log" "$OUT/test.log" && tail -8 "$F/jest/test.log" | tee -a "$S"
fi
H=/tmp/ata_h
if [ -n "${OBJ:-}" ]; then
  nvcc -o $H "$OBJ" -lcublas > "$F/build.txt" 2>&1 || { cat "$F/build.txt"; exit 1; }
else
  nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata bench/dev/ata/ata_harness.cu \
    -lcublas -o $H 2> "$F/build.txt" || { grep -E "error" "$F/build.txt" | head -30; exit 1; }
fi
say "harness ready"
if has correctall; then  # every method and variant, every shape
  timeout ${CA_T:-240} $H --no-timing --variants > "$F/correct.log" 2>&1
  say "correctness --variants: rc=$? $(grep -c ' PASS$' "$F/correct.log") PASS lines, $(grep -c ' FAIL$' "$F/correct.log") FAIL lines, $(tail -1 "$F/correct.log")"
fi
if has correct; then
  $H --no-timing --methods ${CORRECT_M:-fast,v.large.bulk,v.large.bulk.nosplit,v.large.bulk.cachedplan,fast.cachedplan} > "$F/correct.log" 2>&1
  say "correctness: rc=$? $(grep -c ' PASS$' "$F/correct.log") PASS lines, $(tail -1 "$F/correct.log")"
fi
if has hostplan; then
  $H --small --methods fast --host-plan > "$F/hostplan.log" 2>&1
  say "host plan: rc=$?"; grep "^host:" "$F/hostplan.log" | tee -a "$S"
fi
if has timeline; then
  say "timeline: $(state)"
  $H --small --methods fast --timeline ${TL_SHAPES:-4000,8000,10000,16000} > "$F/timeline.log" 2>&1
  say "  rc=$? $(tail -1 "$F/timeline.log")"
fi
M=${TIME_M:-fast,probe.timed,probe.nomirror,probe.nostore,probe.epionly,v.large.nosplit,cublasDsyrk+mirror}
TF=${TIME_FLAGS:-}
for step in time time2; do
  has $step || continue
  say "$step: harness timing, 150 ms gaps, rotated: $(state)"
  timeout ${TIME_T:-200} $H $TF --no-big-check --methods $M --shapes ${TIME_SHAPES:-4000,10000,2000x4000,8000x4000} > "$F/$step.log" 2>&1
  say "  rc=$? $(tail -1 "$F/$step.log")"
done
if has pkgab; then
  say "package order back to back: $(state)"
  $H --keeppool-all --no-big-check --gap-ms 0 --fixed-order --reps 10 --shapes ${PKGAB_SHAPES:-4000,6000} \
    --methods ${PKGAB_M:-cublasDgemm,cublasDsyrk+mirror,tiled,fast,tiled,v.large.bulk} > "$F/pkgab.log" 2>&1
  say "  rc=$? $(tail -1 "$F/pkgab.log")"
fi
if has memcheck; then
  timeout ${MC_T:-150} compute-sanitizer --tool memcheck --leak-check full $H --tiny --methods ${MC_M:-v.large.bulk,v.large.bulk.nosplit} > "$F/memcheck.txt" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$F/memcheck.txt" | tr '\n' ' ') $(tail -1 "$F/memcheck.txt")"
fi
if has racecheck; then
  timeout ${RC_T:-150} compute-sanitizer --tool racecheck $H --tiny --methods ${RC_M:-v.large.bulk.nosplit} > "$F/racecheck.txt" 2>&1
  say "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$F/racecheck.txt" | tr '\n' ' ') $(tail -1 "$F/racecheck.txt")"
fi
say "end: $(state)"
cp "$S" "$OUT/summary.txt"
for l in timeline time time2 pkgab correct; do [ -f "$F/$l.log" ] && cp "$F/$l.log" "$OUT/$l.log"; done
tar -cJf "$OUT/rest.tar.xz" -C "$F" . 2>/dev/null
grep -E "launch 3|per SM|^==" "$F/timeline.log" 2>/dev/null | cut -c1-200
for l in time time2 pkgab; do [ -f "$F/$l.log" ] && sed -n '/== table/,/^$/p' "$F/$l.log" | cut -c1-125; done
true
