#!/usr/bin/env bash
# Packaging check: pack the workspace packages (cuda-kernels and its platform packages), install the
# tarballs together into empty projects with nvcc out of reach, as a user would, and check:
#   - the install pulls at most 10 packages and 15 MB;
#   - require('cuda-kernels') loads the platform package's binary (found by node-gyp-build in its
#     prebuilds/linux-x64/) and require('cuda-kernels/cpu')
#     works, with install scripts run and with them blocked (npm 12's default; --ignore-scripts);
#   - without the platform packages (--omit=optional), cuda-kernels/cpu still works, the main entry
#     throws the "possible solutions" error, and `cuda-kernels info` exits 1 saying what it tried.
# Nothing is published, so the tarballs stand in for the registry.
#
# A platform package is packed with its release binary when `npm run prebuild` made one (checked
# by prebuild.js --check). Where it did not (CI builds from source), the local build stands in for
# the CUDA 13 package's binary and the CUDA 12 package is packed without one: the counts and sizes
# are then printed as measured on those stand-ins.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MAX_PACKAGES=10
MAX_BYTES=15000000

export CUDA_KERNELS_SKIP_BUILD=1 # packing must not start a build (the prepare script)
npm run build:ts --silent
tgz=$(npm pack --silent --ignore-scripts --pack-destination "$work" | tail -1)
tar -tzf "$work/$tgz" > "$work/contents"
for f in package/dist/index.d.ts package/dist/cpu/index.js package/native/addon.cc package/CMakeLists.txt package/scripts/build.js; do
  grep -qx "$f" "$work/contents" || {
    echo "$tgz lacks $f" >&2
    exit 1
  }
done
if grep -qE 'package/(test|build|node_modules|packages|prebuilds)/|\.node$' "$work/contents"; then
  echo "$tgz contains a binary, test/, build/, packages/ or node_modules/" >&2
  exit 1
fi
echo "packed $tgz ($(du -h "$work/$tgz" | cut -f1))"

binaries=()
tuple=$(node -p 'process.platform + "-" + process.arch')
for dir in packages/*/; do
  dir=${dir%/}
  variant=${dir##*-}
  stage="$work/stage/$(basename "$dir")"
  mkdir -p "$stage/prebuilds/$tuple"
  cp "$dir/package.json" "$stage/"
  # prebuildify's name for the N-API build for glibc (scripts/prebuild.js PREBUILD_NAME).
  release="$dir/prebuilds/$tuple/cuda_kernels.glibc.node"
  if [ -f "$release" ]; then
    node scripts/prebuild.js --check "$variant"
    cp "$release" "$stage/prebuilds/$tuple/"
    cp "$dir/build-info.json" "$stage/"
    what="release prebuild"
  elif [ "$variant" = cuda13 ] && [ -f build/Release/cuda_kernels.node ]; then
    cp build/Release/cuda_kernels.node "$stage/prebuilds/$tuple/cuda_kernels.glibc.node"
    echo '{"standIn": "the local build (no npm run prebuild here)"}' > "$stage/build-info.json"
    what="stand-in: build/Release (not a release prebuild)"
  else
    what="no binary (no npm run prebuild here)"
  fi
  t=$(cd "$stage" && npm pack --silent --ignore-scripts --pack-destination "$work" | tail -1)
  binaries+=("$work/$t")
  echo "packed $t ($(du -h "$work/$t" | cut -f1)): $what"
done

# A PATH with node and npm but no nvcc; CUDA_PATH pointing nowhere.
nonvcc="$work/bin"
mkdir -p "$nonvcc"
ln -s "$(command -v node)" "$nonvcc/node"
ln -s "$(command -v npm)" "$nonvcc/npm"
ln -s "$(command -v npx)" "$nonvcc/npx"
run() { env PATH="$nonvcc:/usr/bin:/bin" CUDA_PATH=/nonexistent "$@"; }

# Packages under node_modules (nested ones too) and their bytes on disk, apparent size.
measure() {
  node -e '
    const fs = require("fs"), path = require("path");
    let packages = 0, bytes = 0;
    const walk = (dir) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) bytes += fs.statSync(p).size;
      }
    };
    const packagesIn = (nm) => {
      if (!fs.existsSync(nm)) return;
      for (const e of fs.readdirSync(nm)) {
        if (e.startsWith(".")) continue;
        const dirs = e.startsWith("@") ? fs.readdirSync(path.join(nm, e)).map((s) => path.join(nm, e, s)) : [path.join(nm, e)];
        for (const d of dirs) {
          if (!fs.existsSync(path.join(d, "package.json"))) continue;
          packages++;
          packagesIn(path.join(d, "node_modules"));
        }
      }
    };
    packagesIn("node_modules");
    walk("node_modules");
    console.log(`${packages} ${bytes}`);
  '
}

consumer() {
  local proj="$work/consumer-$1"
  mkdir -p "$proj"
  echo '{"name":"consumer","version":"1.0.0","private":true}' > "$proj/package.json"
  echo "$proj"
}

for mode in scripts ignore-scripts; do
  proj=$(consumer "$mode")
  flags=(--no-audit --no-fund --foreground-scripts)
  [ "$mode" = ignore-scripts ] && flags+=(--ignore-scripts)
  (cd "$proj" && run npm install "${flags[@]}" "$work/$tgz" "${binaries[@]}" > install.log 2>&1) || {
    cat "$proj/install.log"
    exit 1
  }
  read -r count bytes < <(cd "$proj" && measure)
  echo "  $mode: npm install pulled $count packages, $(node -e "console.log((${bytes}/1e6).toFixed(2))") MB ($(grep -o 'added [0-9]* packages' "$proj/install.log"))"
  if [ "$count" -gt "$MAX_PACKAGES" ] || [ "$bytes" -gt "$MAX_BYTES" ]; then
    echo "the install is over budget: $count packages (at most $MAX_PACKAGES), $bytes bytes (at most $MAX_BYTES)" >&2
    (cd "$proj" && npm ls --all) >&2 || true
    exit 1
  fi
  test ! -e "$proj/node_modules/cuda-kernels/build"
  (cd "$proj" && run node -e '
    const cpu = require("cuda-kernels/cpu");
    const c = cpu.atA(Float64Array.from([1, 2, 3, 4]), 2, 2);
    if (String(Array.from(c)) !== "10,14,14,20") throw new Error(`cpu.atA gave ${Array.from(c)}`);
    const ck = require("cuda-kernels");
    const info = ck.runtimeInfo();
    const n = ck.deviceCount();
    if (typeof n !== "number") throw new Error("deviceCount() is not a number");
    if (!info.binary.name.startsWith("@cuda-kernels/")) throw new Error(`loaded ${info.binary.name}, not a platform package`);
    console.log(`  ${process.argv[1]}: require ok: ${info.binary.name} (CUDA ${info.runtimeVersion}, ${info.build.cudaArchitectures}); deviceCount() = ${n}` +
      (n ? "" : ` (${info.noDeviceReason})`));
  ' "$mode")
  (cd "$proj" && run npx --no-install cuda-kernels --version > /dev/null)
done

# Without the platform packages: what a user on an unsupported system, or with --omit=optional, meets.
proj=$(consumer no-binary)
(cd "$proj" && run npm install --no-audit --no-fund --ignore-scripts --omit=optional "$work/$tgz" > install.log 2>&1) || {
  cat "$proj/install.log"
  exit 1
}
(cd "$proj" && run node -e '
  const cpu = require("cuda-kernels/cpu");
  if (cpu.reduce([1, 2, 3], "sum") !== 6) throw new Error("cuda-kernels/cpu without a binary");
  try {
    require("cuda-kernels");
    throw new Error("require(\"cuda-kernels\") loaded without a binary");
  } catch (e) {
    if (!/no native binary could be loaded/.test(e.message) || !/Possible solutions:/.test(e.message)) throw e;
  }
  console.log("  no-binary: cuda-kernels/cpu works; require(\"cuda-kernels\") explains the possible solutions");
')
set +e
(cd "$proj" && run npx --no-install cuda-kernels info > info.log 2>&1)
status=$?
set -e
if [ "$status" -ne 1 ] || ! grep -q 'Possible solutions:' "$proj/info.log"; then
  echo "cuda-kernels info without a binary: exit $status (expected 1)" >&2
  cat "$proj/info.log" >&2
  exit 1
fi
(cd "$proj" && run npx --no-install cuda-kernels info --allow-no-gpu > /dev/null)
echo "  no-binary: cuda-kernels info exits 1 listing what it tried (0 with --allow-no-gpu)"
echo "packaging check passed"
