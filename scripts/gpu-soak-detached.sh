#!/usr/bin/env bash
# The soak for longer than one GPU call allows (the device tool stops a command at 600 s): started in
# its own session from a copy of the tree, it outlives the call that starts it, and a second call
# collects it. The copy matters: the next call re-copies the working tree, and a worker thread that
# starts meanwhile would find files missing (a 2026-11-27 soak failed that way).
#
#   bash scripts/gpu-soak-detached.sh start OUTDIR [MINUTES] [jest args...]   # call 1 (after gpu-bundle.sh)
#   bash scripts/gpu-soak-detached.sh wait OUTDIR                             # call 2, while the machine is warm
#
# `start` runs the jest suites named (if any) beside the soak, then tells the soak that the other work
# is done (its end measurement of free memory waits for that), and returns. Suites whose tests compare
# free device memory fail beside the soak by design: run those alone.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: gpu-soak-detached.sh start|wait OUTDIR [MINUTES] [jest args...]}
out=${2:?usage: gpu-soak-detached.sh start|wait OUTDIR [MINUTES] [jest args...]}
mkdir -p "$out/soak" "$out/beside"
out=$(cd "$out" && pwd)
started=/tmp/ck-soak.started
others=/tmp/ck-others.done
case $mode in
  start)
    minutes=${3:-10}
    shift 3 2> /dev/null || shift $#
    rm -f "$started" "$others"
    bash scripts/gpu-run.sh "$out/info" info > /dev/null 2>&1
    rm -rf /tmp/ck-soak-root && cp -a . /tmp/ck-soak-root
    export PATH=/tmp/ck-node/bin:$PATH CK_REQUIRE_GPU=1 CK_COMMIT=$(cat .gpu-bundle/commit 2> /dev/null || echo unknown)
    (cd /tmp/ck-soak-root && setsid nohup bash -c "node -r ./test/harness/ts-register.js test/harness/soak.ts --minutes $minutes --log '$out/soak/soak.log' --start-file $started --wait-file $others > '$out/soak/soak.out' 2>&1; echo \"soak exit \$?\" > '$out/soak/exit.txt'" < /dev/null > /dev/null 2>&1 &)
    while [ ! -f "$started" ] && [ "$SECONDS" -lt 180 ]; do sleep 1; done
    echo "soak started after $SECONDS s ($minutes min)"
    if [ $# -gt 0 ]; then
      CK_REPORT_FILE="$out/beside/report.txt" CK_PROGRESS_FILE="$out/beside/test-progress.log" timeout -k 10 "${CK_BESIDE_TIMEOUT:-400}" \
        node node_modules/jest/bin/jest.js --ci -i "$@" --json --outputFile="$out/beside/jest.json" > "$out/beside/test.log" 2>&1
      echo "jest beside the soak: exit $?"
    fi
    touch "$others"
    ;;
  wait)
    touch "$others"
    while pgrep -f test/harness/soak.ts > /dev/null && [ "$SECONDS" -lt "${CK_WAIT_LIMIT:-300}" ]; do sleep 2; done
    cat "$out/soak/exit.txt" 2> /dev/null || echo "no exit recorded: the soak is still running after $SECONDS s, or never started"
    grep -E "soak (start|end)|memoryInfo free: start|soak (passed|FAILED)|failure" "$out/soak/soak.log" 2> /dev/null | cut -c1-300
    ;;
  *)
    echo "usage: gpu-soak-detached.sh start|wait OUTDIR [MINUTES] [jest args...]" >&2
    exit 2
    ;;
esac
