#!/usr/bin/env bash
# Every test, with every feature: the CPU suite, and the CUDA backend's tests, which compile
# each kernel with NVRTC (installed by install_nvrtc.sh) and skip the GPU runs when no GPU
# is present.
set -euo pipefail
cd "$(dirname "$0")/.."
nvrtc_lib="$(bash scripts/install_nvrtc.sh)"
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cargo test --workspace --all-features "$@"
