#!/usr/bin/env bash
# Installs NVRTC (PyPI's nvidia-cuda-nvrtc wheel, CUDA 13.0 to match the device machines'
# driver) into a virtualenv outside the repository and prints the folder holding libnvrtc,
# for LD_LIBRARY_PATH. No GPU is needed: the CUDA kernels' compile test uses it on CPU-only
# machines. Does nothing but print the folder when it is already installed.
set -euo pipefail
venv="${TINYTORCH_NVRTC_VENV:-$HOME/.cache/tinytorch/nvrtc-venv}"
lib="$venv/lib/python3.11/site-packages/nvidia/cu13/lib"
if [ ! -e "$lib/libnvrtc.so.13" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "nvidia-cuda-nvrtc==13.0.*" >&2
fi
lib="$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/lib | head -n1)"
echo "$lib"
