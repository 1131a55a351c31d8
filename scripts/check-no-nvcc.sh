#!/usr/bin/env bash
# A contributor without the CUDA toolkit: a copy of the working tree (what git would clone, plus
# uncommitted changes), `npm install` with no nvcc anywhere, then `npm test`. The install must
# succeed, saying it skipped the native build, and the suites that need no binary must pass, with
# the others listed as skipped and why.
#
# The toolkit is hidden, not uninstalled: its folders are covered by empty ones in a private mount
# namespace (unshare; root or user namespaces), which ends with the command.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # mktemp -d makes it 0700; test/cli.test.ts runs the CLI as nobody under root
mkdir -p "$work/clone" "$work/empty"
git ls-files -co --exclude-standard -z | grep -zv '^node_modules$' | tar --null -T - -cf - | tar -xf - -C "$work/clone"

# Every folder an nvcc could come from: CUDA_PATH, /usr/local/cuda, the PATH.
hide=()
for nvcc in "${CUDA_PATH:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc $(type -aP nvcc 2> /dev/null || true); do
  [ -x "$nvcc" ] && hide+=("$(dirname "$(readlink -f "$nvcc")")")
done
if [ "$(id -u)" -eq 0 ]; then ns=(unshare --mount --propagation private); else ns=(unshare --mount --map-root-user); fi

# shellcheck disable=SC2016
"${ns[@]}" bash -c '
  set -euo pipefail
  empty=$1 clone=$2
  shift 2
  for d in "$@"; do mount --bind "$empty" "$d"; done
  if command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "check-no-nvcc: nvcc is still reachable" >&2
    exit 1
  fi
  cd "$clone"
  started=$(date +%s)
  npm install --no-audit --no-fund --foreground-scripts > install.log 2>&1 || {
    cat install.log
    echo "check-no-nvcc: npm install failed without nvcc" >&2
    exit 1
  }
  grep -q "no nvcc (CUDA toolkit.*cuda-kernels/cpu works" install.log || {
    cat install.log
    echo "check-no-nvcc: the install did not say it skipped the native build" >&2
    exit 1
  }
  echo "  npm install without nvcc: ok in $(($(date +%s) - started)) s (native build skipped, as it said)"
  npm test -- --ci > test.log 2>&1 || {
    cat test.log
    echo "check-no-nvcc: npm test failed without nvcc" >&2
    exit 1
  }
  # The reason is the real one: the install step found no nvcc (not a guess).
  grep -q "suites that need the native binary (no native binary: not built: npm install found no nvcc" test.log || {
    cat test.log
    echo "check-no-nvcc: npm test did not list the suites it skipped" >&2
    exit 1
  }
  echo "  npm test without nvcc: $(grep -E "^Test Suites:" test.log | tail -1); $(grep -E "^Tests:" test.log | tail -1)"
  grep -m1 -A0 "^Skipped [0-9]* suites that need the native binary" test.log | sed "s/^/  /"
' check-no-nvcc "$work/empty" "$work/clone" "${hide[@]}"
echo "no-nvcc check passed"
