#!/bin/bash
# One GPU call of the persistent look-back round (NOTES.md, "third round"): a smoke run, the checks of
# every persistent shape, two interleaved timing passes, then memcheck and racecheck on the persistent
# kernel. The harness is built beforehand (run_gpu.sh's nvcc line) and carried in.
#   bash persist_gpu.sh HARNESS OUTDIR
set -u
H=${1:?usage: persist_gpu.sh HARNESS OUTDIR}
O=${2:?usage: persist_gpu.sh HARNESS OUTDIR}
mkdir -p "$O"
export OMP_NUM_THREADS=16
gpu() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; }
echo "start: $(gpu)" > "$O/clocks.txt"
# A deadlock would otherwise burn the whole call: stop at once if the smoke run does not finish.
timeout 20 "$H" --one "fast[P32Kx6w4]" 24 > "$O/smoke.txt" 2>&1 || { echo "smoke failed rc=$?"; cat "$O/smoke.txt"; exit 1; }
CK_SCAN_ONLY=${CHECK_ONLY:-P} timeout 150 "$H" --medium > "$O/check.txt" 2>&1
echo "check rc=$? $(grep -E '^correctness' "$O/check.txt")"; grep FAIL "$O/check.txt" | head -20
echo "after check: $(gpu)" >> "$O/clocks.txt"
export CK_SCAN_ONLY=${TIME_ONLY:-"P,[128x256B],160x256B stream blockorder"} CK_SCAN_DTYPES=${TIME_DTYPES:-int32,float32,float64} CK_SCAN_REPS=12
for r in 1 2; do
  timeout 100 "$H" --time-only --no-check > "$O/time$r.txt" 2>&1; echo "time$r rc=$?"
  echo "after time$r: $(gpu)" >> "$O/clocks.txt"
done
export CK_SCAN_ONLY=${SAN_ONLY:-P32Kx6w4}
timeout 60 compute-sanitizer --tool memcheck --print-limit 20 "$H" --small > "$O/memcheck.txt" 2>&1; echo "memcheck rc=$?"; tail -2 "$O/memcheck.txt"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 20 "$H" --san > "$O/racecheck.txt" 2>&1; echo "racecheck rc=$?"; tail -2 "$O/racecheck.txt"
echo "end: $(gpu)" >> "$O/clocks.txt"
cat "$O/clocks.txt"
for f in time1 time2; do
  echo "== $f (method ms xcub xcopy)"
  grep -E "^time (int32|float32|float64) +2\^(28|30) " "$O/$f.txt" | grep -vE "copy kernel|reduce|excl" |
    awk '{m=$4; for (i = 5; i <= NF - 12; i++) m = m " " $i; printf "%s %s %s %s %s %s\n", $2, $3, m, $(NF-11), $(NF-7), $(NF-5)}'
done
