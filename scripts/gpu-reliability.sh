#!/usr/bin/env bash
# The reliability evidence of issue 11 in one GPU-host run of at most ~10 minutes (after
# gpu-bundle.sh, like gpu-run.sh):
#   1. the reliability suites natively (gpu-run.sh's test step): property, fuzz, faults, load, workers;
#   2. the soak for the time that is left, and beside it the four compute-sanitizer tools on the small
#      suites (scripts/sanitize.sh). The soak measures its start memory before the sanitizers start
#      and its end memory after they have finished, so their processes do not blur the comparison.
#
#   bash scripts/gpu-reliability.sh OUTDIR      (CK_DEADLINE: seconds for the whole run, default 560)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-reliability.sh OUTDIR}
deadline=${CK_DEADLINE:-560}
mkdir -p "$out/native" "$out/soak"
# -k: a jest that outlives SIGTERM is killed 10 s later; left running it would hold device memory
# through the soak's end measurement (a 2026-11-26 soak logged 861 MiB "leaked" that way).
CK_JEST_ARGS="${CK_JEST_ARGS:-test/faults test/fuzz test/property.test test/load test/workers}" \
  timeout -k 10 "${CK_NATIVE_TIMEOUT:-200}" bash scripts/gpu-run.sh "$out/native" test > /dev/null
rm -f "$out/native/jest.json" "$out/native/cublas-check.log"
export PATH=/tmp/ck-node/bin:$PATH CK_REQUIRE_GPU=1
left=$((deadline - SECONDS - 45))
minutes=$(awk -v s="$left" 'BEGIN { printf "%.2f", s / 60 }')
rm -f /tmp/ck-soak.started /tmp/ck-others.done
node -r ./test/harness/ts-register.js test/harness/soak.ts --minutes "$minutes" --log "$out/soak/soak.log" \
  --start-file /tmp/ck-soak.started --wait-file /tmp/ck-others.done > /dev/null 2>&1 &
soak=$!
while [ ! -f /tmp/ck-soak.started ] && kill -0 $soak 2>/dev/null; do sleep 1; done
per_tool=$(((deadline - SECONDS - 30) / 4))
CK_TOOL_TIMEOUT=$per_tool CK_REPORT_FILE="$out/soak/report-sanitize.txt" bash scripts/sanitize.sh > "$out/soak/sanitize.log" 2>&1
echo "sanitize (4 tools, ${per_tool} s each at most): exit $?" >> "$out/soak/summary.txt"
touch /tmp/ck-others.done
wait $soak
echo "soak (${minutes} min planned): exit $?" >> "$out/soak/summary.txt"
grep -E "ERROR SUMMARY|^compute-sanitizer" "$out/soak/sanitize.log" | sort | uniq -c >> "$out/soak/summary.txt"
cat "$out/native/summary.txt" "$out/soak/summary.txt"
grep -E "soak (start|end)|memoryInfo free: start|soak (passed|FAILED)" "$out/soak/soak.log"
