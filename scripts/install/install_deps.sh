#!/usr/bin/env bash
# Installs the system packages TinyTorch's main job and tests use, when they are missing:
#   dataset-fashion-mnist  Fashion-MNIST as IDX files in /usr/share/datasets/fashion-mnist
#   fonts-dejavu-core      the font the training-curve PNGs are labelled with
#   fortunes               the text corpus of `tinytorch train-lm` (/usr/share/games/fortunes)
#   openmpi-bin, libopenmpi-dev  Open MPI: `mpirun` and the library of the `mpi` feature
#   libclang-dev           libclang, with which the `mpi` crate generates its MPI bindings
#   chromium, chromium-driver  headless Chromium and ChromeDriver for the dashboard's browser test
# Uses apt-get (as root, or through sudo); does nothing when everything is present.
set -euo pipefail

need=()
[ -e /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] || need+=(dataset-fashion-mnist)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
[ -e /usr/share/games/fortunes/cookie ] || need+=(fortunes)
command -v mpirun >/dev/null || need+=(openmpi-bin)
[ -e /usr/include/x86_64-linux-gnu/openmpi/mpi.h ] || [ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || need+=(libopenmpi-dev)
# (libclang-cpp, which other packages bring, is not the libclang bindgen loads.)
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "install_deps: missing ${need[*]} and no apt-get here; install them by hand" >&2
    exit 1
fi
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
echo "install_deps: installing ${need[*]}" >&2
"${as_root[@]}" apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    "${as_root[@]}" apt-get update -q >/dev/null
    "${as_root[@]}" apt-get install -y -q "${need[@]}" >/dev/null
}
