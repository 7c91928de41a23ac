#!/usr/bin/env bash
# The README's main job on a fresh machine: install what is missing (Fashion-MNIST and a font
# from Debian, the release build), then train on Fashion-MNIST with a progress bar, print the
# test accuracy, and write runs/main/{checkpoint.safetensors,metrics.csv,metrics.jsonl,curves.png}.
# Extra arguments go to `tinytorch train` (e.g. --model seed-cnn --epochs 10).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install/install_deps.sh
cargo build --release -p tinytorch-cli
exec target/release/tinytorch train --dataset fashion-mnist --model lenet5 --epochs 3 \
    --batch-size 64 --optimizer sgd --lr 0.05 --momentum 0.9 --seed 0 --out runs/main "$@"
