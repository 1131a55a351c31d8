#!/usr/bin/env bash
# On the GPU host, from an unpacked tree (/work/helpers/gpu-pack.sh): the harness (built on the dev
# machine, path in $HARNESS), then the stencil test suites and the package's bench, logs to $OUT.
#   STEPS   any of: harness sanitize sass ncu test bench (default: harness test bench)
#   HARNESS_ARGS, BENCH_RUNS (default 2), BENCH_SIZES (default 4096,8192,16384)
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:?}
# The bench stamps its rows with this (gpu-pack.sh's unpack.sh writes it).
export CK_COMMIT=${CK_COMMIT:-$(cat .gpu-bundle/commit 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
smi() { echo "$1 $(nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader)" | tee -a "$OUT/gpu-state.txt"; }
for step in ${STEPS:-harness test bench}; do
  case $step in
    harness)
      smi "harness start"
      timeout 240 "$HARNESS" ${HARNESS_ARGS:-} > "$OUT/harness.log" 2>&1
      echo "harness: exit $?"
      smi "harness end"
      grep -E "^checks|FAIL" "$OUT/harness.log" | head -20
      grep -vE "^checks|FAIL" "$OUT/harness.log" | tail -60
      ;;
    sanitize)
      for tool in memcheck racecheck; do
        # racecheck did not finish --small in 100, 120 or 150 s (H100, 447ae06 and 6224db7): it gets --race.
        set_=--small; [ $tool = racecheck ] && set_=--race
        timeout ${T_SAN:-120} compute-sanitizer --tool $tool --error-exitcode 86 "$HARNESS" --no-time $set_ --variants 0,1,2,3 \
          > "$OUT/$tool.log" 2>&1
        echo "compute-sanitizer $tool: exit $? ($(grep -E '^checks|ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tr '\n' ' '))"
      done
      ;;
    sass)
      cuobjdump -sass "$HARNESS" > /tmp/sass-all.txt 2>&1
      # The kernels of the shipped entries 0 (float 224×96, double 104×96, 512 threads, the three flags).
      k='FastShapeI(fLi224ELi96ELi512ELi1ELi4|dLi104ELi96ELi512ELi1ELi2)ELb1ELb1ELb1E'
      awk -v k="$k" '/Function : /{p = $0 ~ ("stencil_fast_kernelI.*" k)} p' /tmp/sass-all.txt > "$OUT/sass.txt"
      echo "sass: $(wc -l < "$OUT/sass.txt") lines"
      ;;
    ncu)
      # Stall reasons and pipe use of variant 0 at 8192², one launch of each dtype.
      for dt in float32 float64; do
        timeout 120 ncu --kernel-name regex:stencil_fast_kernel --launch-skip 3 --launch-count 1 \
          --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
          --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section InstructionStats \
          "$HARNESS" --no-check --variants 0 --sizes 8192 --reps 1 --dtype $dt > "$OUT/ncu-$dt.txt" 2>&1
        echo "ncu $dt: exit $?"
      done
      ;;
    test)
      smi "test start"
      CK_JEST_ARGS="test/stencil.test.ts test/property.test.ts -t stencil" bash scripts/gpu-run.sh "$OUT/test" test > /dev/null 2>&1
      cat "$OUT/test/summary.txt"
      grep -E "✕|●" "$OUT/test/test.log" | head -20
      ;;
    bench)
      for run in $(seq 1 "${BENCH_RUNS:-2}"); do
        smi "bench $run start"
        node dist/cli/main.js bench stencil --sizes "${BENCH_SIZES:-4096,8192,16384}" --methods fast --reps 5 \
          --out "$OUT/bench$run" --no-charts > "$OUT/bench$run.log" 2>&1
        echo "bench $run: exit $?"
        smi "bench $run end"
        grep -E "copy|fast" "$OUT/bench$run.log" | grep -E "GiB|8192|4096|16384" | head -20
      done
      ;;
  esac
done
