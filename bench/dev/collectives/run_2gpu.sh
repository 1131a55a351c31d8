#!/usr/bin/env bash
# The 2-GPU runs of issue 16 on nvidia-h200-x2, in calls that each fit the device tool's 10 minutes:
#   run_2gpu.sh OUT suite   the distributed suite, one GPU per rank (~100 s)
#   run_2gpu.sh OUT bench   bench collectives, apsp-dist (n = 32768) and mlp-dist, results merged (~4 min)
#   run_2gpu.sh OUT goal    bench apsp-dist at n = 32768 and 200064 (a graph larger than one GPU made on
#                           the devices, Bellman-checked, its rate beside n = 32768's) and mlp-dist: the
#                           second run of the APSP and MLP rows as well (~8 min)
# Run from an unpacked tree (scripts/gpu-run.sh's layout) with node on PATH. NCCL_NVLS_ENABLE=0 stays set.
set -uo pipefail
out=${1:?usage: run_2gpu.sh OUT suite|bench|goal}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv > "$out/gpus-start.csv"
case ${2:?step} in
  suite) CK_JEST_ARGS="test/dist-gpu" setsid timeout -k 5 300 bash scripts/gpu-run.sh "$out/suite" test ;;
  bench) CK_BENCH_ARGS="collectives apsp-dist mlp-dist" setsid timeout -k 5 500 bash scripts/gpu-run.sh "$out/bench" bench ;;
  goal) CK_BENCH_ARGS="apsp-dist mlp-dist --sizes 32768,200064 --reps 3" setsid timeout -k 5 570 bash scripts/gpu-run.sh "$out/goal" bench ;;
  *) echo "unknown step $2" >&2; exit 2 ;;
esac
rc=$?
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv > "$out/gpus-end.csv"
echo "$2: exit $rc"
exit $rc
