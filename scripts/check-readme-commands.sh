#!/usr/bin/env bash
# The README's two commands, as a newcomer runs them: in a fresh copy of the tree (what git would
# clone, plus uncommitted changes), no node_modules, no build, each command as the README prints it
# (scripts/readme-commands.js reads them). The first must set up and run the demo — on the GPU, or
# here, without one, the CPU reference with the line saying why — and the second must run the tests
# green. Slow: a clean install and a full build of the addon where nvcc is.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mktemp -d makes a 0700 folder; a clone is readable by others, and test/cli.test.ts runs the CLI as
# another user when CI runs as root (it needs to read the tree's lib/ and test/harness/).
chmod 755 "$work"
mkdir -p "$work/clone"
git ls-files -co --exclude-standard -z | grep -zv '^node_modules$' | tar --null -T - -cf - | tar -xf - -C "$work/clone"

mapfile -t commands < <(node scripts/readme-commands.js)
if [ "${#commands[@]}" -ne 2 ]; then
  echo "check-readme-commands: README.md shows ${#commands[@]} commands under '## Try it', not 2" >&2
  exit 1
fi

cd "$work/clone"
for i in 0 1; do
  started=$(date +%s)
  # CUDA_KERNELS_SKIP_BUILD from the caller's environment would skip what the README promises.
  env -u CUDA_KERNELS_SKIP_BUILD bash -c "${commands[$i]}" < /dev/null > "step$i.log" 2>&1 || {
    cat "step$i.log"
    echo "check-readme-commands: \`${commands[$i]}\` failed in a fresh clone" >&2
    exit 1
  }
  echo "  \`${commands[$i]}\`: ok in $(($(date +%s) - started)) s"
done

# The demo ran: its AᵀA table, and without a GPU the line that says why and that the CPU ran.
grep -q 'cpu.atA (i-k-j)' step0.log || {
  cat step0.log
  echo "check-readme-commands: the demo printed no AᵀA table" >&2
  exit 1
}
if grep -q '^No GPU: ' step0.log; then
  grep -q '^Ran the CPU reference only' step0.log
  echo "  demo: $(grep -m1 '^No GPU: ' step0.log | cut -c1-120)"
fi
# The tests ran green (jest exits non-zero on a failure; the summary says how many ran).
grep -E '^Tests: ' step1.log | tail -1 | sed 's/^/  npm test: /'
if grep -qE '^Tests: .*[0-9]+ failed' step1.log; then
  echo "check-readme-commands: npm test reported failures" >&2
  exit 1
fi
echo "README commands check passed"
