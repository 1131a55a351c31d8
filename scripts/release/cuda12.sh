#!/usr/bin/env bash
# A CUDA 12.4 toolkit for the fallback binary (@cuda-kernels/linux-x64-cuda12), assembled from
# Debian 13 (trixie) packages into the usual layout (bin/nvcc, nvvm/, include/, lib64/). Not used by
# CI or by `npm install`: only `npm run prebuild` uses it, inside the glibc sysroot (sysroot.sh).
#
#   scripts/release/cuda12.sh [DIR]      default: $CUDA_KERNELS_CUDA12 or ~/.cache/cuda-kernels/cuda-12.4
#
# Downloads about 1 GB (nvidia-cuda-dev holds every CUDA library; only cudart, the headers, CUB,
# Thrust and libcu++ are kept: about 210 MB with the compilers). Every file is checked against the archive's signed
# index (InRelease, verified with the Debian archive keyring) before it is unpacked.
set -euo pipefail

dest=${1:-${CUDA_KERNELS_CUDA12:-$HOME/.cache/cuda-kernels/cuda-12.4}}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
suite=trixie
# package name -> archive component
packages=(
  "nvidia-cuda-toolkit non-free" # nvcc, ptxas, fatbinary, nvlink, cudafe++, cicc
  "nvidia-cuda-dev non-free"     # headers, libcudart_static.a
  "libcudart12 non-free"         # libcudart.so, which CMake's FindCUDAToolkit insists on finding
  "libcub-dev main"
  "libthrust-dev main"
  "libcu++-dev main"
)
for tool in curl gpgv xz dpkg-deb sha256sum; do
  command -v "$tool" > /dev/null || {
    echo "cuda12.sh: $tool is needed" >&2
    exit 1
  }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

curl -fsS -o InRelease "$mirror/dists/$suite/InRelease"
gpgv --keyring "$keyring" --output Release InRelease 2> gpgv.log || {
  cat gpgv.log >&2
  echo "cuda12.sh: the archive index is not signed by the Debian archive keyring" >&2
  exit 1
}
for component in main non-free; do
  index="$component/binary-amd64/Packages.xz"
  curl -fsS -o "Packages-$component.xz" "$mirror/dists/$suite/$index"
  want=$(awk -v f="$index" '/^SHA256:/{s=1;next} /^[A-Za-z]/{s=0} s && $3==f {print $1}' Release)
  echo "$want  Packages-$component.xz" | sha256sum -c --quiet
  xz -dc "Packages-$component.xz" > "Packages-$component"
done

mkdir -p x
for entry in "${packages[@]}"; do
  read -r name component <<< "$entry"
  record=$(awk -v RS= -v p="Package: $name" 'index($0, p "\n") == 1' "Packages-$component")
  file=$(sed -n 's/^Filename: //p' <<< "$record")
  sum=$(sed -n 's/^SHA256: //p' <<< "$record")
  echo "cuda12.sh: $name $(sed -n 's/^Version: //p' <<< "$record") ($(($(sed -n 's/^Size: //p' <<< "$record") / 1048576)) MB)"
  curl -fsS -o pkg.deb "$mirror/$file"
  echo "$sum  pkg.deb" | sha256sum -c --quiet
  dpkg-deb -x pkg.deb x
  rm pkg.deb
done

# The usual CUDA layout, with an nvcc.profile that finds everything relative to bin/.
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/nvvm/bin" "$dest/nvvm/libdevice" "$dest/lib64"
cp x/usr/lib/nvidia-cuda-toolkit/bin/nvcc "$dest/bin/"
cp -r x/usr/lib/nvidia-cuda-toolkit/bin/crt "$dest/bin/"
for b in ptxas fatbinary nvlink cudafe++ bin2c cuobjdump nvdisasm nvprune cu++filt; do cp "x/usr/bin/$b" "$dest/bin/"; done
cp x/usr/lib/nvidia-cuda-toolkit/bin/cicc "$dest/nvvm/bin/"
cp x/usr/lib/nvidia-cuda-toolkit/libdevice/* "$dest/nvvm/libdevice/"
cp -r x/usr/include "$dest/include"
# The addon links cudart statically (CMakeLists.txt); CMake wants the shared one to exist too.
for lib in libcudart_static.a libcudadevrt.a libculibos.a; do cp "x/usr/lib/x86_64-linux-gnu/$lib" "$dest/lib64/"; done
cp -P x/usr/lib/x86_64-linux-gnu/libcudart.so* "$dest/lib64/"
cat > "$dest/bin/nvcc.profile" << 'EOF'
TOP                = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH   += $(TOP)/lib64:
PATH              += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES          +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES          =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS      +=
PTXAS_FLAGS       +=
EOF
"$dest/bin/nvcc" --version | tail -1
echo "cuda12.sh: CUDA 12.4 in $dest ($(du -sh "$dest" | cut -f1))"
