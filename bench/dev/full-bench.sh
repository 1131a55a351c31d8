#!/usr/bin/env bash
# Full-size bench of every family, one process per family, for checking that a change left the rows
# within noise of the committed ones (issue 22; compare with bench/dev/compare-runs.js). On a GPU host,
# from an unpacked tree (scripts/gpu-run.sh needs node on PATH):
#   T_FAM=60 T_MLP=170 bash bench/dev/full-bench.sh OUT_DIR run1    (ONLY="ata --sizes 8000" for one family)
o=$1; r=$2; mkdir -p $o
smi() { echo "$1 $(nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader)" >> $o/gpu-state.txt; }
specs=("ata --sizes 4000,8000" "gemm --sizes 2048,4096" "scan --sizes 16777216,268435456" "stencil --sizes 4096,8192" "apsp --sizes 6144" "mlp")
[ -n "${ONLY:-}" ] && specs=("$ONLY")
for spec in "${specs[@]}"; do
  f=${spec%% *}; smi "$r $f start"
  s=$(date +%s); t=${T_FAM:-90}; [ $f = mlp ] && t=${T_MLP:-150}
  CK_BENCH_ARGS="$spec" setsid timeout -k 5 $t bash scripts/gpu-run.sh $o/$r-$f bench > /dev/null 2>&1
  echo "$r $f rc $? $(( $(date +%s) - s )) s"
  smi "$r $f end"
done
