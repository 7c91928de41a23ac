#!/usr/bin/env bash
# Build, on a machine with the Rust toolchain and no GPU, everything a GPU machine needs to
# test and measure TinyTorch's CUDA backend, into one folder (default gpu_bundle/, about
# 35 MB): every test binary with GPU tests (release, --features cuda, stripped; cuda_nccl
# with --features nccl) and the
# `tinytorch` binary in binaries.tar.xz (107 MB unpacked: each binary links the library, so
# they compress 7x together), the fixtures those tests read, a 10,000-image slice of Fashion-MNIST
# for a short training run, scripts/bench/bench_layers_torch.py and bench_gpu_train.py (with the
# twins it imports), the Python package as a wheel built
# with --features cuda (maturin: $MATURIN, else `maturin` on PATH)
# with its tests and pytest's wheels, and run.sh.
#
# On the GPU machine (CUDA driver, PyTorch; no Rust toolchain and no network needed):
#     bash gpu_bundle/run.sh [OUT_DIR]
# runs every GPU test, the layer table against that machine's PyTorch, the bandwidth rows,
# the Python training loops and per-op table against PyTorch (bench_gpu_train.py)
# and a short `tinytorch train --device cuda`, and writes OUT_DIR/summary.md (default
# gpu_bundle/results/). See docs/GPU.md.
#
# Usage: bash scripts/gpu_bundle.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu_bundle}"
rm -rf "$out"
mkdir -p "$out/bin" "$out/tests" "$out/fixtures" "$out/data" "$out/scripts/bench" "$out/scripts/twins"

# The test binaries that hold GPU tests. Each skips its GPU tests where no GPU is present,
# so they can be tried here too.
gpu_tests=(cuda cuda_attention cuda_cudnn cuda_norm cuda_sort_scan cuda_kernels_compile op_table op_random)
args=()
for t in "${gpu_tests[@]}"; do args+=(--test "$t"); done
echo "== building ${#gpu_tests[@]} test binaries and tinytorch (release, --features cuda)" >&2
cargo test --release -p tinytorch --features cuda --no-run --message-format=json "${args[@]}" \
    > "$out/.cargo-messages.json"
cargo build --release -p tinytorch-cli --features cuda >&2
# The NCCL door's one-GPU test (a one-rank communicator: no MPI to start) needs feature nccl.
# It calls no MPI, so the linker drops libmpi and it runs where Open MPI is not installed.
echo "== building tests/cuda_nccl (release, --features nccl)" >&2
cargo test --release -p tinytorch --features nccl --no-run --message-format=json \
    --test cuda_nccl >> "$out/.cargo-messages.json"
python3 - "$out" <<'EOF'
import json, shutil, sys
out = sys.argv[1]
for line in open(f"{out}/.cargo-messages.json"):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], f"{out}/tests/{m['target']['name']}")
EOF
rm "$out/.cargo-messages.json"
cp target/release/tinytorch "$out/bin/"
strip "$out/bin/"* "$out/tests/"*
tar -cJf "$out/binaries.tar.xz" -C "$out" bin tests
rm -r "$out/bin" "$out/tests"

cp tinytorch/tests/fixtures/ops.safetensors tinytorch/tests/fixtures/random_ops.safetensors "$out/fixtures/"
cp scripts/bench/bench_layers_torch.py scripts/bench/bench_stats.py "$out/scripts/bench/"
# The training loops and per-op table under PyTorch and TinyTorch (bench_gpu_train.py), with
# the twins' model definitions it imports.
cp scripts/bench/bench_gpu_train.py "$out/scripts/bench/"
cp scripts/twins/torch_models.py scripts/twins/torch_gpt.py "$out/scripts/twins/"
cp scripts/gpu/gpu_run.sh "$out/run.sh"

# The Python package built with --features cuda (one abi3 wheel), its GPU tests with the
# fixtures they read, and pytest's wheels, so run.sh can install them offline.
maturin="${MATURIN:-$(command -v maturin)}" \
    || { echo "maturin not found: pip install maturin, or set MATURIN" >&2; exit 1; }
echo "== building the Python wheel (release, --features cuda) with $maturin" >&2
"$maturin" build --release -m tinytorch-py/Cargo.toml --features cuda -o "$out/wheels" >&2
python3 -m pip download -q -d "$out/wheels" pytest >&2
cp -r tinytorch-py/tests "$out/pytests"
rm -rf "$out/pytests/__pycache__"
git rev-parse HEAD > "$out/COMMIT" 2>/dev/null || echo unknown > "$out/COMMIT"

# Training data: the first 10,000 Fashion-MNIST training images (the IDX header's count
# rewritten) and the 10,000 test images, from the Debian package (scripts/install/install_deps.sh).
src=/usr/share/datasets/fashion-mnist
python3 - "$src" "$out/data" <<'EOF'
import gzip, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
KEEP = 10_000
for kind, item in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
    raw = gzip.open(f"{src}/train-{kind}-ubyte.gz").read()
    header = 16 if kind.startswith("images") else 8
    head = bytearray(raw[:header])
    struct.pack_into(">I", head, 4, KEEP)
    with gzip.open(f"{dst}/train-{kind}-ubyte.gz", "wb") as f:
        f.write(bytes(head) + raw[header:header + KEEP * item])
    shutil.copy(f"{src}/t10k-{kind}-ubyte.gz", dst)
EOF
du -sh "$out" >&2
echo "$out"
