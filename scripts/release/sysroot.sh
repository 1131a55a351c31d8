#!/usr/bin/env bash
# A Debian 11 (bullseye: glibc 2.31, g++ 10, CMake 3.18) root to build the release binaries in, so
# that they load on systems as old as that glibc. Not used by CI or by `npm install`: only
# `npm run prebuild` (scripts/prebuild.js) builds inside it, when it exists.
#
#   scripts/release/sysroot.sh create        debootstrap it (about 600 MB; needs root or user namespaces)
#   scripts/release/sysroot.sh run CMD...    run CMD inside it, in the current folder
#
# bullseye is the oldest Debian release still on the main archive; its glibc (2.31) is the floor the
# binaries get (Ubuntu 20.04, Debian 11, RHEL 9 and newer). Node.js 20's own floor is glibc 2.28.
#
# Inside, the paths the build needs are bind-mounted at the same place as outside: the repository,
# the real folder of node_modules (a worktree may link it), and each CUDA toolkit given in
# CK_SYSROOT_BIND (colon-separated). The mounts live in a private mount namespace: nothing is left
# mounted when the command ends. node itself appears as /opt/ck-node/bin/node, first on PATH.
set -euo pipefail

root=${CUDA_KERNELS_SYSROOT:-$HOME/.cache/cuda-kernels/sysroot-bullseye}
suite=bullseye
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  else
    # Unprivileged: a user namespace in which we are root (needs kernel.unprivileged_userns_clone).
    unshare --map-root-user --mount "$@"
  fi
}

case ${1:-} in
  create)
    command -v debootstrap > /dev/null || {
      echo "sysroot.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
      exit 1
    }
    mkdir -p "$(dirname "$root")"
    as_root debootstrap --variant=minbase --include=g++,make,cmake,binutils "$suite" "$root" "$mirror"
    echo "sysroot ready: $root ($(du -sh "$root" | cut -f1)); glibc $(chroot "$root" ldd --version 2> /dev/null | head -1 | grep -o '[0-9.]*$' || echo '?')"
    ;;
  run)
    shift
    [ -x "$root/usr/bin/g++" ] || {
      echo "sysroot.sh: no sysroot at $root (run: scripts/release/sysroot.sh create)" >&2
      exit 1
    }
    repo=$(cd "$(dirname "$0")/../.." && pwd)
    binds=("$repo" "$(cd "$repo/node_modules" && pwd -P)")
    IFS=: read -r -a extra <<< "${CK_SYSROOT_BIND:-}"
    for p in "${extra[@]}"; do [ -n "$p" ] && binds+=("$(readlink -f "$p")"); done
    # The mount script runs as root in a new mount namespace; arguments pass through "$@".
    # shellcheck disable=SC2016
    as_root unshare --mount --propagation private bash -c '
      set -e
      root=$1 cwd=$2 node=$3 nbinds=$4
      shift 4
      for ((i = 0; i < nbinds; i++)); do
        mkdir -p "$root$1"
        mount --bind "$1" "$root$1"
        shift
      done
      # node (its glibc floor is 2.28) at a fixed place rather than over the /usr/bin of the sysroot.
      mkdir -p "$root/opt/ck-node/bin" && touch "$root/opt/ck-node/bin/node"
      mount --bind "$node" "$root/opt/ck-node/bin/node"
      mount -t proc proc "$root/proc"
      mount --bind /dev "$root/dev"
      exec chroot "$root" /usr/bin/env -C "$cwd" PATH="/opt/ck-node/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/tmp "$@"
    ' sysroot "$root" "$(pwd)" "$(readlink -f "$(command -v node)")" "${#binds[@]}" "${binds[@]}" "$@"
    ;;
  *)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
