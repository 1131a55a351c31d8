#!/bin/bash
# The shipping call of the persistent look-back (NOTES.md, third round), in one GPU call: the
# harness's checks of the shipped `fast` at every size (10^8+3 and 2^31+5 included) and of the new
# shapes, two interleaved timing passes (crossover sizes 2^21-2^23 included), memcheck and racecheck
# on the shipped instantiation, then the package: its scan tests and `bench scan` twice.
#   bash ship_gpu.sh PACKDIR OUT    (PACKDIR: gpu-pack.sh's folder plus the prebuilt scan_harness)
# Everything lands in OUT/logs.tar.gz; the summaries are printed. Steps are skipped once the call
# nears the device tool's 600 s limit.
set -u
P=$(cd "${1:?usage: ship_gpu.sh PACKDIR OUT}" && pwd)
OUT=${2:?usage: ship_gpu.sh PACKDIR OUT}
W=$OUT/w
mkdir -p "$W"
H=$P/scan_harness
export OMP_NUM_THREADS=16 NCCL_NVLS_ENABLE=0
gpu() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; }
left() { [ "$SECONDS" -lt "$1" ] || { echo "skipped (at ${SECONDS}s): $2"; return 1; }; }
finish() {
  echo "end (${SECONDS}s): $(gpu)" >> "$W/clocks.txt"
  tar -czf "$OUT/logs.tar.gz" -C "$W" .
  cat "$W/clocks.txt"
}
trap finish EXIT
echo "start: $(gpu)" > "$W/clocks.txt"
timeout 20 "$H" --one fast 24 > "$W/smoke.txt" 2>&1 || { echo "smoke failed rc=$?"; cat "$W/smoke.txt"; exit 1; }

CK_SCAN_ONLY="=fast,=lookback,w8 evictfirst" timeout 120 "$H" --medium > "$W/check-medium.txt" 2>&1
echo "check medium rc=$? $(grep -E '^correctness' "$W/check-medium.txt")"
left 200 "full check" && {
  CK_SCAN_ONLY="=fast" timeout 120 "$H" --no-time > "$W/check-full.txt" 2>&1
  echo "check full (fast, cub; up to 10^8+3 and 2^31+5) rc=$? $(grep -E '^correctness' "$W/check-full.txt")"
}
grep -h FAIL "$W"/check-*.txt | head -10
echo "after checks (${SECONDS}s): $(gpu)" >> "$W/clocks.txt"

export CK_SCAN_ONLY="=fast,=lookback,P32Kx6w4],P32Kx6w8,P32Kx7w8,P16Kx6w8,P32Kx6w4 evictfirst"
export CK_SCAN_DTYPES=int32,float32,float64 CK_SCAN_REPS=12
for r in 1 2; do
  left 300 "time$r" && { timeout 80 "$H" --time-only --no-check > "$W/time$r.txt" 2>&1; echo "time$r rc=$?"; }
  echo "after time$r (${SECONDS}s): $(gpu)" >> "$W/clocks.txt"
done
export CK_SCAN_ONLY="P32Kx6w8 evictfirst"  # the instantiation `fast` runs from 16 MiB up
left 330 memcheck && {
  timeout 45 compute-sanitizer --tool memcheck --print-limit 20 "$H" --small > "$W/memcheck.txt" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.txt")"
}
left 360 racecheck && {
  timeout 45 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 20 "$H" --san > "$W/racecheck.txt" 2>&1
  echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' "$W/racecheck.txt")"
}
unset CK_SCAN_ONLY CK_SCAN_DTYPES CK_SCAN_REPS

bash "$P/unpack.sh" > "$W/unpack.txt" 2>&1 || { echo "unpack failed"; exit 1; }
cd /tmp/w-scanp && export PATH=/tmp/ck-node/bin:$PATH
left 400 "package tests" && CK_JEST_ARGS="test/scan.test.ts test/property.test.ts -t scan" timeout 150 bash scripts/gpu-run.sh "$W/pkg-test" test | tail -2
for r in 1 2; do
  left $((450 + 40 * r)) "bench $r" && {
    CK_BENCH_ARGS="scan --sizes 1048576,16777216,268435456,1073741824" timeout 100 bash scripts/gpu-run.sh "$W/pkg-bench$r" bench | tail -1
    echo "after bench$r (${SECONDS}s): $(gpu)" >> "$W/clocks.txt"
  }
done

for f in time1 time2; do
  [ -f "$W/$f.txt" ] || continue
  echo "== $f (dtype n method ms xcub xcopy)"
  grep -E "^time (int32|float32|float64) +2\^(2[0-9]|30) " "$W/$f.txt" | grep -E " (copy|cub|fast|lookback|fast\[P32Kx6w8 evictfirst\]) " | grep -vE "copy kernel|excl" |
    awk '{m=$4; for (i = 5; i <= NF - 12; i++) m = m " " $i; printf "%s %s %s %s %s %s\n", $2, $3, m, $(NF-11), $(NF-7), $(NF-5)}'
done
for r in 1 2; do
  [ -f "$W/pkg-bench$r/bench.log" ] && { echo "== bench $r"; grep -E "│ (scan|copy) " "$W/pkg-bench$r/bench.log" | grep -vE "warp|blocks" | tr -s ' ' | cut -c1-80; }
done
