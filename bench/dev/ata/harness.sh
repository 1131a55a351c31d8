#!/bin/bash
# The AᵀA tuning harness (ata_harness.cu) on a GPU host: one step per argument, in order, each with
# the GPU's SM clock, power and throttle reasons before it, the logs in $OUT. A step's harness flags
# follow an `=`; without them it runs its default. Run from the repository root (or an unpacked gpu
# bundle for `pair` and `jest`); OBJ=file links an ata_harness.cu compiled elsewhere with -c (seconds)
# instead of building it here (~70 s).
#
#   OUT=dir bash bench/dev/ata/harness.sh STEP[=flags] ...
#   OUT=/tmp/ata bash bench/dev/ata/harness.sh correct alt='--shapes 8000,16000' memcheck
#
# Steps (the timing protocol is what tells them apart):
#   pair       the package bench's pair protocol, fast against DSYRK+mirror at the claimed sizes, twice
#              (bench/dev/pair-bench.sh; flags replace `ata --pair`)
#   jest       test/ata and the property tests through scripts/gpu-run.sh
#   correct    correctness of every method and variant on every shape (--no-timing --variants)
#   time       every method interleaved, 150 ms idle before each timed run, the order rotated each
#              round: the harness's default protocol (METHODS, SHAPES)
#   alt        fast and DSYRK+mirror strictly alternating, back to back (--gap-ms 0 --fixed-order)
#   aabb       the pair protocol's order in the harness: for each method X of AABB (default fast), X X
#              DSYRK+mirror DSYRK+mirror back to back, 20 rounds, one log per X (NOTES.md §14)
#   pkgorder   the package bench's old fixed order, back to back (DGEMM, DSYRK, tiled, fast): the order
#              that favoured fast after the light tiled kernel (issue 34)
#   timeline   where each SM's time goes in the 128-tile kernel
#   hostplan   the host cost of launchFast's planning
#   ncu        the DMMA pipe, stall reasons and shared-memory traffic of METHODS under ncu
#   sass       the DMMA instructions of the build (cuobjdump)
#   memcheck, racecheck, synccheck   compute-sanitizer over the tiny shapes (SAN_METHODS, default fast);
#              synccheck: every __syncthreads reached by the whole block at one instruction (NOTES.md §11.4)
set -o pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/ata-harness}
F=/tmp/ata-harness-work
rm -rf "$F"
mkdir -p "$F" "$OUT"
S="$OUT/summary.txt"
T0=$(date +%s)
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$S"; }
state() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
METHODS=${METHODS:-fast,cublasDsyrk+mirror,cublasDgemm}
SHAPES=${SHAPES:-4000,8000,10000,16000}
H=/tmp/ata_h
built=
build() {
  [ -n "$built" ] && return 0
  if [ -n "${OBJ:-}" ]; then
    nvcc -o $H "$OBJ" -lcublas > "$F/build.txt" 2>&1 || { cat "$F/build.txt"; exit 1; }
  else
    nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Inative -Inative/ata \
      bench/dev/ata/ata_harness.cu -lcublas -o $H 2> "$F/build.txt" || { grep -E "error" "$F/build.txt" | head -30; exit 1; }
  fi
  built=1
  say "harness built"
}
# One harness run: its log and a line in the summary.
harness() {
  local name=$1
  shift
  build
  say "$name: $(state)"
  timeout "${STEP_T:-300}" $H "$@" > "$OUT/$name.log" 2>&1
  say "  $name: exit $? $(tail -1 "$OUT/$name.log")"
  sed -n '/== table/,/^$/p' "$OUT/$name.log" | cut -c1-130
}
say "start: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,enforced.power.limit --format=csv,noheader); commit ${COMMIT:-$(cat .gpu-bundle/commit 2> /dev/null)}"
for arg in "$@"; do
  step=${arg%%=*}
  flags=
  [[ $arg == *=* ]] && flags=${arg#*=}
  # shellcheck disable=SC2086
  case $step in
    pair) say "pair: $(state)"; bash bench/dev/pair-bench.sh "$OUT/pair" 2 ${flags:-ata --pair} | tee -a "$S" ;;
    jest)
      CK_JEST_ARGS="test/ata.test.ts test/property.test.ts -t ata" timeout "${STEP_T:-300}" bash scripts/gpu-run.sh "$F/jest" test > /dev/null 2>&1
      say "jest: $(tail -1 "$F/jest/summary.txt")"
      [ -f "$F/jest/test.log" ] && cp "$F/jest/test.log" "$OUT/jest.log"
      ;;
    correct) harness correct ${flags:---no-timing --variants} ;;
    time) harness time ${flags:---no-big-check --gap-ms 150 --reps 7 --methods $METHODS --shapes $SHAPES} ;;
    alt) harness alt ${flags:---no-big-check --gap-ms 0 --fixed-order --reps 9 --methods fast,cublasDsyrk+mirror --shapes $SHAPES} ;;
    aabb)
      for x in $(echo "${AABB:-fast}" | tr ',' ' '); do
        harness "aabb-$x" ${flags:---no-big-check --gap-ms 0 --fixed-order --reps 20 --shapes $SHAPES} --methods "$x,$x,cublasDsyrk+mirror,cublasDsyrk+mirror"
      done
      ;;
    pkgorder) harness pkgorder ${flags:---no-big-check --gap-ms 0 --fixed-order --reps 7 --methods cublasDgemm,cublasDsyrk+mirror,tiled,fast --shapes $SHAPES} ;;
    timeline) harness timeline ${flags:---small --methods fast --timeline $SHAPES} ;;
    hostplan) harness hostplan ${flags:---small --methods fast --host-plan} ;;
    ncu)
      build
      say "ncu: $(state)"
      timeout "${STEP_T:-300}" ncu --clock-control none --metrics \
sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_dmma.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
lts__t_bytes.sum,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,\
smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,\
smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct \
        $H ${flags:---profile --methods $METHODS} > "$OUT/ncu.txt" 2>&1
      say "  ncu: exit $?"
      ;;
    sass)
      build
      cuobjdump --dump-sass $H | grep -oE 'DMMA[.0-9A-Za-z]*' | sort | uniq -c | tee -a "$S"
      ;;
    memcheck | racecheck | synccheck)
      build
      tool=$step
      extra=
      [ $tool = memcheck ] && extra="--leak-check full"
      timeout "${STEP_T:-300}" compute-sanitizer --tool $tool $extra $H ${flags:---tiny --methods ${SAN_METHODS:-fast}} > "$OUT/$tool.txt" 2>&1
      say "$tool: exit $? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tr '\n' ' ')"
      ;;
    *) say "unknown step $step" ;;
  esac
done
say "end: $(state)"
