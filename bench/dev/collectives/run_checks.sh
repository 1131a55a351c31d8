#!/usr/bin/env bash
# The distributed layer's GPU runs, each fitting one call of the device tool (10 minutes):
#   run_checks.sh OUT suite   the distributed suites (test/dist-gpu.test.ts, test/dist.test.ts); on a
#                             1-GPU host the ranks share the GPU, each with its own NCCL_HOSTID (~6 min)
#   run_checks.sh OUT bench   bench collectives: allReduce and broadcast from 64 KiB to 1 GiB on 2 and 4
#                             ranks (one GPU each), ours and torch.distributed interleaved in one run,
#                             with the host time per call (~5 min on 4 GPUs)
# Run from an unpacked tree (scripts/gpu-run.sh's layout: `npm run gpu:bundle` here, the device tool's
# carry [".gpu-bundle"]). NCCL_NVLS_ENABLE=0 stays set.
set -uo pipefail
out=${1:?usage: run_checks.sh OUT suite|bench}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv > "$out/gpus-start.csv"
case ${2:?step} in
  suite) CK_JEST_ARGS="test/dist-gpu.test.ts test/dist.test.ts" setsid timeout -k 5 560 bash scripts/gpu-run.sh "$out/suite" test ;;
  bench) CK_BENCH_ARGS="collectives" setsid timeout -k 5 560 bash scripts/gpu-run.sh "$out/bench" bench ;;
  *) echo "unknown step $2" >&2; exit 2 ;;
esac
rc=$?
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv > "$out/gpus-end.csv"
echo "$2: exit $rc"
exit $rc
