#!/usr/bin/env bash
# Packaging check: pack the package, install the tarball into empty projects with nvcc out of
# reach, and require it. Proves a dependent project gets the shipped prebuild (1) when install
# scripts run and (2) when its package manager blocks them (npm 12's default).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm run prebuild --silent
tgz=$(npm pack --silent --pack-destination "$work" | tail -1)
echo "packed $tgz ($(du -h "$work/$tgz" | cut -f1))"
tar -tzf "$work/$tgz" > "$work/contents"
grep -q 'package/prebuilds/linux-x64/node.napi.glibc.node' "$work/contents"
grep -q 'package/dist/index.d.ts' "$work/contents"
if grep -qE 'package/(test|build|node_modules)/' "$work/contents"; then
  echo "the tarball contains test/, build/ or node_modules/" >&2
  exit 1
fi

# A PATH with node and npm but no nvcc; CUDA_PATH pointing nowhere. install.js only builds when no
# binary loads, so a build attempt here would mean the prebuild was not found.
nonvcc="$work/bin"
mkdir -p "$nonvcc"
ln -s "$(command -v node)" "$nonvcc/node"
ln -s "$(command -v npm)" "$nonvcc/npm"

for mode in scripts ignore-scripts; do
  proj="$work/consumer-$mode"
  mkdir -p "$proj"
  (
    cd "$proj"
    echo '{"name":"consumer","version":"1.0.0","private":true}' > package.json
    flags=(--no-audit --no-fund --foreground-scripts)
    [ "$mode" = ignore-scripts ] && flags+=(--ignore-scripts)
    env PATH="$nonvcc:/usr/bin:/bin" CUDA_PATH=/nonexistent npm install "${flags[@]}" "$work/$tgz" > install.log 2>&1 || {
      cat install.log
      exit 1
    }
    if grep -q 'building the addon' install.log; then
      echo "install ($mode) tried to build from source instead of loading the prebuild" >&2
      cat install.log
      exit 1
    fi
    test ! -e node_modules/cuda-kernels/build
    env PATH="$nonvcc:/usr/bin:/bin" node -e '
      const ck = require("cuda-kernels");
      const n = ck.deviceCount();
      const info = ck.runtimeInfo();
      if (typeof n !== "number") throw new Error("deviceCount() is not a number");
      console.log(`  ${process.argv[1]}: require ok, deviceCount() = ${n}, CUDA ${info.runtimeVersion}` + (n ? "" : ` (${info.noDeviceReason})`));
    ' "$mode"
  )
done
echo "packaging check passed"
