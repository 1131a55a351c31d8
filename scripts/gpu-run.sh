#!/usr/bin/env bash
# Runs on a GPU host that has CUDA but no Node.js (see gpu-bundle.sh): unpacks the bundle, then
# runs the requested steps, writing logs and result files into OUTDIR.
#
#   bash scripts/gpu-run.sh OUTDIR [info] [test] [sanitize] [soak] [bench] [torch] [kernels-py]
#
# CK_BENCH_ARGS   arguments for `cuda-kernels bench` (default: all)
# CK_JEST_ARGS    extra jest arguments (e.g. a test path) for the test and sanitize steps
# CK_SANITIZE     compute-sanitizer tools to run (default: memcheck); the suites see the tool in
#                 CK_SANITIZER_TOOL and shrink their problems (CK_APSP_QUICK=1 too)
# CK_SOAK_MINUTES minutes of the soak step (default 10)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-run.sh OUTDIR [steps...]}
shift
steps=${*:-info test sanitize bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

bundle=.gpu-bundle
mkdir -p /tmp/ck-node/bin
xz -dc "$bundle/node.xz" > /tmp/ck-node/bin/node && chmod +x /tmp/ck-node/bin/node
export PATH=/tmp/ck-node/bin:$PATH
tar -xJf "$bundle/payload.tar.xz"
export CK_COMMIT=$(cat "$bundle/commit" 2>/dev/null || echo unknown)
export CK_REQUIRE_GPU=1
# The reliability suites append their numbers (cases run, fuzz calls, memory) here.
export CK_REPORT_FILE="$out/report.txt"
note "commit $CK_COMMIT; node $(node --version); $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"

# The compile-time proof that cublas.h matches cublas_v2.h (this host has the header).
if g++ -std=c++17 -fsyntax-only -I/usr/local/cuda/include -Inative native/core/cublas_check.cc 2> "$out/cublas-check.log"; then
  note "cublas_check.cc: declarations match cublas_v2.h"
else
  note "cublas_check.cc: MISMATCH (see cublas-check.log)"
fi

# The same proof for NCCL (native/distributed/nccl.h against nccl.h), where the host has NCCL's header.
if [ -f /usr/include/nccl.h ] || [ -f /usr/local/cuda/include/nccl.h ]; then
  if g++ -std=c++17 -fsyntax-only -I/usr/local/cuda/include -Inative native/distributed/nccl_check.cc 2> "$out/nccl-check.log"; then
    note "nccl_check.cc: declarations match nccl.h"
  else
    note "nccl_check.cc: MISMATCH (see nccl-check.log)"
  fi
fi

# The same proof for NVRTC (native/nvrtc/nvrtc.h against the toolkit's nvrtc.h).
if [ -f /usr/local/cuda/include/nvrtc.h ]; then
  if g++ -std=c++17 -fsyntax-only -I/usr/local/cuda/include -Inative native/nvrtc/nvrtc_check.cc 2> "$out/nvrtc-check.log"; then
    note "nvrtc_check.cc: declarations match nvrtc.h"
  else
    note "nvrtc_check.cc: MISMATCH (see nvrtc-check.log)"
  fi
fi

jest=(node node_modules/jest/bin/jest.js --ci -i ${CK_JEST_ARGS:-})

for step in $steps; do
  case $step in
    info)
      { node dist/cli/main.js info; node dist/cli/main.js demo; } > "$out/info.log" 2>&1
      note "info+demo: exit $? (info.log)"
      ;;
    test)
      CK_PROGRESS_FILE="$out/test-progress.log" "${jest[@]}" --json --outputFile="$out/jest.json" > "$out/test.log" 2>&1
      rc=$?
      note "jest: exit $rc; $(node -e 'const r=require(process.argv[1]);console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`)' "$out/jest.json" 2>/dev/null)"
      ;;
    sanitize)
      for tool in ${CK_SANITIZE:-memcheck}; do
        # API errors are part of the tests (out-of-memory on purpose) and each is checked by the addon;
        # kernel memory errors, races and uninitialised reads are what the sanitizer is here for.
        CK_SANITIZER_TOOL=$tool CK_APSP_QUICK=1 CK_PROGRESS_FILE="$out/sanitize-$tool-progress.log" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 86 --target-processes all \
          "${jest[@]}" > "$out/sanitize-$tool.log" 2>&1
        rc=$?
        # One summary per process (the suites start child processes): all of them, counted.
        note "compute-sanitizer $tool: exit $rc; $(grep -E 'ERROR SUMMARY' "$out/sanitize-$tool.log" | sort | uniq -c | tr -s ' ' | paste -sd ';')"
      done
      ;;
    soak)
      node -r ./test/harness/ts-register.js test/harness/soak.ts --minutes "${CK_SOAK_MINUTES:-10}" --log "$out/soak.log" > /dev/null 2>&1
      note "soak: exit $?; $(grep -E 'memoryInfo free: start' "$out/soak.log" | tail -1)"
      ;;
    bench)
      mkdir -p "$out/results"
      cp bench/results/*.json "$out/results/" 2>/dev/null
      # Charts are left out here: `npm run bench:report` redraws them (and the results README) from
      # the JSON that comes back, and the device tool returns few files.
      # shellcheck disable=SC2086
      node dist/cli/main.js bench ${CK_BENCH_ARGS:-all} --no-charts --out "$out/results" > "$out/bench.log" 2>&1
      note "bench: exit $? (bench.log, results/)"
      # Only the file this GPU's run merged into comes back (the device tool returns 8 files at most).
      for f in "$out"/results/*.json; do
        cmp -s "$f" "bench/results/$(basename "$f")" && rm -f "$f"
      done
      ;;
    torch)
      # PyTorch's epoch time for the MLP benchmark's nets on this GPU (bench/dev/mlp/torch_mlp.py).
      python3 bench/dev/mlp/torch_mlp.py ${CK_TORCH_ARGS:-} > "$out/torch-mlp.log" 2>&1
      note "torch mlp: exit $? (torch-mlp.log)"
      ;;
    kernels-py)
      # CuPy's and PyTorch's run-time compiled kernels on this GPU, beside `bench kernels`
      # (bench/dev/kernels/cupy_kernels.py; bench/dev/merge-python-rows.js kernels merges its rows).
      # shellcheck disable=SC2086
      python3 bench/dev/kernels/cupy_kernels.py ${CK_KERNELS_PY_ARGS:-} > "$out/cupy-kernels.jsonl" 2> "$out/cupy-kernels.log"
      note "cupy kernels: exit $? (cupy-kernels.jsonl)"
      ;;
    *) note "unknown step $step" ;;
  esac
done
cat "$summary"
