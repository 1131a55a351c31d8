#!/usr/bin/env bash
# Packaging check: pack the workspace packages (cuda-kernels and its platform packages), install the
# tarballs into empty projects as a user would, and check:
#   - with the platform packages, nvcc out of reach: the install pulls at most 10 packages and 15 MB;
#     require('cuda-kernels') loads the platform package's prebuild (found by node-gyp-build in its
#     prebuilds/linux-x64/) and require('cuda-kernels/cpu') works, with install scripts run (the
#     install step then finds the prebuild and builds nothing) and with them blocked (--ignore-scripts);
#   - the core package alone with nvcc (CK_PACKAGE_BUILD=0 skips this, the longest part): its install
#     step fetches the build tools, builds the addon for this toolkit, and it loads (no GPU here:
#     deviceCount() is 0, with the reason);
#   - with neither (--omit=optional, scripts blocked): cuda-kernels/cpu still works, the main entry
#     throws the "possible solutions" error, `cuda-kernels info` lists what it tried and exits 0
#     (1 with --require-gpu), and `cuda-kernels demo` runs the CPU reference.
# Nothing is published, so the tarballs stand in for the registry.
#
# CK_PACKAGE_KEEP=<dir> keeps the project installed with scripts blocked (and gpu-check.js in it),
# for a GPU host: there, `node gpu-check.js` in <dir> loads the platform package's binary and checks
# the kernels against the CPU (scripts/release/gpu-check.js).
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

npm run build:ts --silent
tgz=$(npm pack --silent --ignore-scripts --pack-destination "$work" | tail -1)
tar -tzf "$work/$tgz" > "$work/contents"
for f in package/dist/index.d.ts package/dist/cpu/index.js package/native/addon.cc package/CMakeLists.txt package/scripts/build.js package/scripts/install.js; do
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
  # The prebuild loads, so the install step (where it ran) built nothing.
  test ! -e "$proj/node_modules/cuda-kernels/build/Release"
  if [ "$mode" = scripts ] && ! grep -q 'loads (.*); nothing to build' "$proj/install.log"; then
    cat "$proj/install.log" >&2
    echo "the install step did not say that the platform package's binary loads" >&2
    exit 1
  fi
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
  if [ "$mode" = ignore-scripts ] && [ -n "${CK_PACKAGE_KEEP:-}" ]; then
    rm -rf "$CK_PACKAGE_KEEP" && mkdir -p "$CK_PACKAGE_KEEP"
    cp -a "$proj/." "$CK_PACKAGE_KEEP/" && cp scripts/release/gpu-check.js "$CK_PACKAGE_KEEP/"
    echo "  kept the project installed with scripts blocked in $CK_PACKAGE_KEEP"
  fi
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
(cd "$proj" && run npx --no-install cuda-kernels info > info.log 2>&1) || {
  cat "$proj/info.log" >&2
  echo "cuda-kernels info without a binary exited non-zero (expected 0: it says why there is no GPU)" >&2
  exit 1
}
grep -q 'Possible solutions:' "$proj/info.log"
if (cd "$proj" && run npx --no-install cuda-kernels info --require-gpu > /dev/null 2>&1); then
  echo "cuda-kernels info --require-gpu without a binary exited 0 (expected 1)" >&2
  exit 1
fi
(cd "$proj" && run npx --no-install cuda-kernels demo > demo.log 2>&1) || {
  cat "$proj/demo.log" >&2
  exit 1
}
grep -q '^Ran the CPU reference only' "$proj/demo.log"
echo "  no-binary: info lists what it tried (exit 0, 1 with --require-gpu); demo runs the CPU reference"

# The core package alone where nvcc is: npm finds no platform package (none is on the registry), so
# the install step builds for this toolkit, fetching the build tools first. For one architecture
# (CK_PACKAGE_ARCHS, default sm_75): what this checks is the install step, the fetch, the build and
# the load, which take the same path for one architecture as for five, in a fifth of the time.
if [ "${CK_PACKAGE_BUILD:-1}" != 0 ]; then
  proj=$(consumer build-from-source)
  started=$(date +%s)
  (cd "$proj" && CUDA_KERNELS_ARCHS=${CK_PACKAGE_ARCHS:-75-real} npm install --no-audit --no-fund --foreground-scripts --omit=optional "$work/$tgz" > install.log 2>&1) || {
    cat "$proj/install.log"
    echo "npm install of the core package alone (with nvcc) failed" >&2
    exit 1
  }
  took=$(($(date +%s) - started))
  grep -q 'building one for the local CUDA toolkit' "$proj/install.log"
  grep -q 'fetching the build tools' "$proj/install.log"
  (cd "$proj" && node -e '
    const ck = require("cuda-kernels");
    const info = ck.runtimeInfo();
    if (info.binary.name !== "local build") throw new Error(`loaded ${info.binary.name}, not the build of the install step`);
    const n = ck.deviceCount();
    if (n === 0 && !info.noDeviceReason) throw new Error("no GPU and no reason given");
    console.log(`  build-from-source: npm install built the addon in ${process.argv[1]} s; it loads: ` +
      `CUDA ${info.runtimeVersion}, ${info.build.cudaArchitectures}; deviceCount() = ${n}` + (n ? "" : ` (${info.noDeviceReason})`));
  ' "$took")
fi
echo "packaging check passed"
