#!/usr/bin/env bash
# Packs what a GPU host without Node.js needs to run this package's GPU tests and benchmarks into
# .gpu-bundle/ (git-ignored): the local `node` binary (xz), and a tarball of node_modules (minus
# lint-only packages), the built addon and dist/. Then, on the GPU host, from the repository root:
#
#   bash scripts/gpu-run.sh OUTDIR [steps...]     (steps: info test sanitize bench; default all)
#
# With the device tool: run `npm run gpu:bundle` here, then a run with carry [".gpu-bundle"] and
# the command `bash scripts/gpu-run.sh $OUT`.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=.gpu-bundle
mkdir -p "$bundle"

if [ "${CK_SKIP_BUILD:-}" != 1 ]; then
  # A profiling build (-lineinfo): compute-sanitizer and ncu on the GPU host then name source lines.
  # Line tables change no generated code, so the benchmarks measure the same kernels as a release.
  CUDA_KERNELS_PROFILE=${CUDA_KERNELS_PROFILE:-1} node scripts/build.js
  npx tsc -p tsconfig.build.json
fi
test -f build/Release/cuda_kernels.node || { echo "no build/Release/cuda_kernels.node: build first" >&2; exit 1; }

node_bin=$(command -v node)
if [ ! -f "$bundle/node.xz" ] || [ "$node_bin" -nt "$bundle/node.xz" ]; then
  xz -T0 -6 -c "$node_bin" > "$bundle/node.xz"
fi

# Lint, formatting and API-doc tools never run on the GPU host; leaving them out halves the payload.
# The chart packages (vega, vega-lite, @resvg) stay: `bench` draws its charts there.
tar -cJf "$bundle/payload.tar.xz" \
  --exclude='node_modules/eslint*' --exclude='node_modules/@eslint*' --exclude='node_modules/@typescript-eslint' \
  --exclude='node_modules/typescript-eslint' --exclude='node_modules/prettier' --exclude='node_modules/clang-format' \
  --exclude='node_modules/typedoc' --exclude='node_modules/@shikijs' --exclude='node_modules/@gerrit0' \
  --exclude='node_modules/lunr' --exclude='node_modules/markdown-it' \
  --exclude='node_modules/.cache' \
  node_modules build/Release/cuda_kernels.node dist
git rev-parse --short=12 HEAD > "$bundle/commit" 2>/dev/null || echo unknown > "$bundle/commit"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then sed -i 's/$/-dirty/' "$bundle/commit"; fi
du -sh "$bundle"/* | sed 's/^/  /'
