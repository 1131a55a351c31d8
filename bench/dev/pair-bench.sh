#!/usr/bin/env bash
# The package benchmark's pair protocol on a GPU host (`cuda-kernels bench … --pair`): RUNS runs back
# to back, each logged with the GPU's clock, power, limit and throttle reasons before and after, the
# rows merged into OUT/results/<gpu>.json (starting from the committed file, so the file that comes
# back is the committed one plus these rows). Run from the repository root; where node is missing it
# unpacks the bundle of scripts/gpu-bundle.sh first, as scripts/gpu-run.sh does.
#
#   bash bench/dev/pair-bench.sh OUT RUNS [bench arguments]      (default: all --pair, every claim)
#   bash bench/dev/pair-bench.sh /tmp/out 2 ata gemm scan stencil --pair --rounds 20
#   bash bench/dev/pair-bench.sh /tmp/out 1 ata --pair fast,cublas-syrk --sizes 8000,12000
#
# Several calls into one OUT (other families, other rounds) merge into the same file.
# Logs: OUT/logs/<gpu>-<commit>-pair-<families>-run<r>.log, and beside each the run's own rows (.json).
# Only the results file that changed is left in OUT/results (the device tool returns few files).
# CK_DEVICE picks the GPU (default 0).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: pair-bench.sh OUT RUNS [bench arguments]}
runs=${2:?usage: pair-bench.sh OUT RUNS [bench arguments]}
shift 2
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(all --pair)
export NCCL_NVLS_ENABLE=0
dev=${CK_DEVICE:-0}
bundle=.gpu-bundle
if ! command -v node > /dev/null; then
  # Unpacked once per bundle: a second call (other families into the same OUT) reuses it.
  sum=$(cksum < "$bundle/payload.tar.xz")
  if [ "$(cat /tmp/ck-node/payload.cksum 2> /dev/null)" != "$sum" ]; then
    mkdir -p /tmp/ck-node/bin
    xz -dc "$bundle/node.xz" > /tmp/ck-node/bin/node && chmod +x /tmp/ck-node/bin/node
    tar -xJf "$bundle/payload.tar.xz" && echo "$sum" > /tmp/ck-node/payload.cksum
  fi
  export PATH=/tmp/ck-node/bin:$PATH
fi
[ -f "$bundle/commit" ] && export CK_COMMIT=${CK_COMMIT:-$(cat "$bundle/commit")}
commit=${CK_COMMIT:-$(git rev-parse --short=12 HEAD 2> /dev/null || echo unknown)}
mkdir -p "$out/results" "$out/logs"
# The committed files, unless an earlier call into this OUT already merged rows into them.
cp -n bench/results/*.json "$out/results/"
slug=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$dev" | head -1 | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-+|-+$//g')
# The families named (the arguments before the first option), for the log's name.
families=""
for a in "${args[@]}"; do
  case $a in -*) break ;; *) families="$families-$a" ;; esac
done
state() {
  nvidia-smi -i "$dev" --format=csv,noheader \
    --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active
}
for r in $(seq 1 "$runs"); do
  log="$out/logs/$slug-${commit:0:7}-pair${families}-run$r.log"
  start=$(date +%s)
  {
    echo "# run $r of $runs: cuda-kernels bench ${args[*]} (commit $commit, device $dev)"
    echo "# start: $(state)"
  } > "$log"
  node dist/cli/main.js bench "${args[@]}" --device "$dev" --no-charts --out "$out/results" >> "$log" 2>&1
  rc=$?
  echo "# end: exit $rc after $(($(date +%s) - start)) s; $(state)" >> "$log"
  echo "run $r: exit $rc, $(($(date +%s) - start)) s ($log)"
  # This run's rows alone (the merged file keeps the last run's where two measured the same pair).
  id=$(sed -nE 's/^run ([^:]+): .*/\1/p' "$log" | tail -1)
  [ -n "$id" ] && node -e '
    const [file, id, to] = process.argv.slice(1);
    const f = JSON.parse(require("fs").readFileSync(file, "utf8"));
    require("fs").writeFileSync(to, JSON.stringify({ ...f, rows: f.rows.filter((r) => r.run === id) }, null, 2) + "\n");
  ' "$out/results/$slug.json" "$id" "${log%.log}.json"
  grep -E "│ .* │ .*× \(" "$log" | head -40
done
for f in "$out"/results/*.json; do
  cmp -s "$f" "bench/results/$(basename "$f")" && rm -f "$f"
done
ls "$out/results"
