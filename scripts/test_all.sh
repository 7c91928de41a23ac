#!/usr/bin/env bash
# Every test, with every feature: the CPU suite, and the CUDA backend's tests, which compile
# each kernel with NVRTC (installed by install_nvrtc.sh) and skip the GPU runs when no GPU
# is present; then the Python package, installed as a user installs it (`pip install
# ./tinytorch-py`, into its own virtualenv outside the repository) and tested with pytest. The MiniLM test (tinytorch/tests/minilm.rs) gets the model files of
# sentence-transformers/all-MiniLM-L6-v2 from install_minilm.sh unless TINYTORCH_MINILM_DIR
# already points at them. Last, scripts/reliability/fuzz.sh fuzzes each file reader for a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start, with the seconds since this script began.
step() { echo "== test_all.sh: $1 (at ${SECONDS} s)"; }
step "NVRTC and MiniLM"
nvrtc_lib="$(bash scripts/install/install_nvrtc.sh)"
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TINYTORCH_MINILM_DIR="${TINYTORCH_MINILM_DIR:-$(bash scripts/install/install_minilm.sh)}"
step "cargo test"
cargo test --workspace --all-features "$@"

# The dashboard in headless Chromium (chromium and chromedriver from install_deps.sh): a short
# training run, the page, its live update. Screenshots go to target/dashboard-screenshots/.
# The binary is the one `cargo test` built; CI requires the browser, elsewhere it may skip.
[ "${CI:-}" = "true" ] && export TINYTORCH_REQUIRE_BROWSER=1
target_dir="${CARGO_TARGET_DIR:-target}"
step "dashboard in Chromium"
python3 tinytorch-cli/tests/dashboard_browser.py "$target_dir/debug/tinytorch" "$target_dir/dashboard-screenshots"

step "Python package (pip install, pytest)"
py_venv="${TINYTORCH_PY_VENV:-$HOME/.cache/tinytorch/py-venv}"
[ -x "$py_venv/bin/python" ] || python3 -m venv "$py_venv"
"$py_venv/bin/pip" install -q --upgrade pip >/dev/null
# mypy: tests/test_stubs.py runs `mypy --strict` over example scripts against the stubs.
"$py_venv/bin/pip" install -q pytest numpy mypy
# With the MPI backend, so that tinytorch.distributed's tests run (Open MPI from install_deps.sh).
MATURIN_PEP517_ARGS="--features mpi" "$py_venv/bin/pip" install -q ./tinytorch-py
# The conformance suite's PyPI model packages (pure Python), pinned and without their
# dependencies: their own `torch` requirement must not pull PyTorch in, since the suite
# makes their `import torch` resolve to tinytorch (tinytorch-py/tests/conformance).
"$py_venv/bin/pip" install -q --no-deps -r tinytorch-py/tests/conformance/requirements.txt
"$py_venv/bin/python" -m pytest -q tinytorch-py/tests

step "fuzz.sh"
# Every reader of outside bytes under libFuzzer for a few seconds each (saved failures in
# fuzz/regressions replayed first), and torch.load under atheris: scripts/reliability/fuzz.sh.
"$py_venv/bin/pip" install -q atheris
# The seeds come from the example `cargo test` built above (a `cargo run -p tinytorch` would
# rebuild the library with other dependency features).
"$target_dir/debug/examples/fuzz_seeds" fuzz/corpus
PYTHON="$py_venv/bin/python" bash scripts/reliability/fuzz.sh
step "done"
