#!/usr/bin/env bash
# run.sh of the GPU bundle (built by scripts/gpu_bundle.sh, copied there as run.sh): on a
# machine with an NVIDIA GPU, its driver and PyTorch (no Rust toolchain, no network), run
# every GPU test, the layer table against PyTorch, the bandwidth rows, the Python training
# loops and per-op table against PyTorch (scripts/bench/bench_gpu_train.py) and two short
# training runs (f32 and bf16 autocast), and write one summary, OUT_DIR/summary.md, beside the
# full logs.
#
# Usage: bash run.sh [OUT_DIR]        (default: results/ next to this script)
# Environment: PYTHON (default python3, must import torch), PEAK_GBS (the GPU's peak memory
# bandwidth in GB/s; looked up from the device name for A100/H100/H200/L4 when unset).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
summary="$out/summary.md"

# CUDA's libraries, loaded at run time: NVRTC (kernel compilation), cuBLAS and cuDNN 9
# (convolutions; libcudnn.so.9 in the nvidia-cudnn-cu13 wheel's nvidia/cudnn/lib) from
# PyTorch's wheels, or a CUDA install (a system cuDNN in the loader's default paths is found
# as well). NVRTC must not be newer than the driver (TinyTorch says so).
libs="$("$py" - <<'EOF' 2>/dev/null
import glob, os, site
dirs = []
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(sp, "nvidia", "*", "lib"))
dirs += [d for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib") if os.path.isdir(d)]
print(":".join(dirs))
EOF
)"
# cudarc opens libnccl.so (or libnccl.so.<CUDA major>); PyPI's nvidia-nccl-cu13 ships only
# libnccl.so.2, so the name it looks for is linked to that in a folder of its own.
mkdir -p "$out/nccl"
for d in ${libs//:/ }; do
    [ -e "$d/libnccl.so.2" ] && ln -sf "$d/libnccl.so.2" "$out/nccl/libnccl.so" && break
done
export LD_LIBRARY_PATH="$libs:$out/nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Which cuDNN the convolutions will load (none: they run as im2col + cuBLAS, with a warning).
cudnn_lib=""
for d in ${libs//:/ }; do
    [ -e "$d/libcudnn.so.9" ] && cudnn_lib="$d/libcudnn.so.9" && break
done
[ -n "$cudnn_lib" ] || cudnn_lib="$(ldconfig -p 2>/dev/null | grep -o '/.*libcudnn\.so\.9$' | head -n1)"
export TINYTORCH_FIXTURES="$here/fixtures"

# The binaries travel packed (binaries.tar.xz); Python unpacks them, as tar may lack xz.
bins="$out/binaries"
rm -rf "$bins" && mkdir -p "$bins"
"$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$here/binaries.tar.xz" "$bins" || { echo "cannot unpack binaries.tar.xz" >&2; exit 2; }

gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"
name="$(echo "$gpu" | cut -d, -f1)"
if [ -z "${PEAK_GBS:-}" ]; then
    case "$name" in
        *H200*) PEAK_GBS=4800 ;;
        *H100*PCIe*) PEAK_GBS=2000 ;;
        *H100*) PEAK_GBS=3350 ;;
        *A100*80GB*) PEAK_GBS=2039 ;;
        *A100*) PEAK_GBS=1555 ;;
        *L4*) PEAK_GBS=300 ;;
        *) PEAK_GBS="" ;;
    esac
fi
{
    echo "# TinyTorch on a GPU: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "- GPU: ${gpu:-NONE found by nvidia-smi: every GPU test below skipped and the GPU runs fail}"
    echo "- commit: $(cat "$here/COMMIT")"
    echo "- PyTorch: $("$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -n1)"
    echo "- libraries from: ${libs:-none found, the system default}"
    echo "- cuDNN: ${cudnn_lib:-NONE found: CUDA convolutions run as im2col + cuBLAS and cuda_cudnn fails}"
    echo
    echo "## Tests"
    echo
    echo "| test binary | passed | failed | skipped GPU tests | result |"
    echo "|---|---:|---:|---:|---|"
} > "$summary"

status=0
for t in "$bins"/tests/*; do
    n="$(basename "$t")"
    log="$out/test_$n.log"
    "$t" --nocapture > "$log" 2>&1
    rc=$?
    passed=$(grep -o '[0-9]* passed' "$log" | tail -n1 | cut -d' ' -f1)
    failed=$(grep -o '[0-9]* failed' "$log" | tail -n1 | cut -d' ' -f1)
    skipped=$(grep -c 'skipped: no CUDA device' "$log")
    verdict=$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc; see test_$n.log)")
    [ $rc -eq 0 ] || status=1
    echo "| $n | ${passed:-?} | ${failed:-?} | $skipped | $verdict |" >> "$summary"
done
{
    echo
    echo "Failures, first lines (full logs in test_*.log):"
    echo
    echo '```'
    grep -h -A3 -- '---- .* stdout ----' "$out"/test_*.log | grep -v '^--$' | head -n 60
    echo '```'
    echo
    echo "## The Python package on the GPU (tests/test_cuda.py, test_bad_input.py)"
    echo
    echo '```'
    if "$py" -m pip install -q --no-index --find-links "$here/wheels" --target "$out/pylib" \
            tinytorch pytest > "$out/pip.log" 2>&1; then
        (cd "$here/pytests" && PYTHONPATH="$out/pylib" "$py" -m pytest -q -p no:cacheprovider \
            test_cuda.py test_bad_input.py > "$out/pytest.log" 2>&1)
        rc=$?
        [ $rc -eq 0 ] || status=1
        grep -E '^(FAILED|ERROR)' "$out/pytest.log" | head -n 30
        tail -n 1 "$out/pytest.log"
    else
        status=1
        echo "pip install of the wheel failed:"; tail -n 5 "$out/pip.log"
    fi
    echo '```'
    echo
    echo "## Memory bandwidth (GB/s of bytes read + written; peak ${PEAK_GBS:-unknown} GB/s)"
    echo
    echo '```'
    "$bins/bin/tinytorch" bench --suite bandwidth --device cuda ${PEAK_GBS:+--peak-gbs "$PEAK_GBS"} 2>&1
    echo '```'
    echo
    echo "## Layer table against PyTorch (ratio = PyTorch ms / TinyTorch ms)"
    echo
    "$py" "$here/scripts/bench/bench_layers_torch.py" --device cuda --markdown --exe "$bins/bin/tinytorch" 2>&1
    echo
    echo "## One Python training loop under PyTorch and TinyTorch on cuda:0, and the per-op table"
    echo
    echo "(scripts/bench/bench_gpu_train.py, TF32 off on both sides; JSON in gpu_train.json, the"
    echo "progress and any traceback in gpu_train.log)"
    echo
    if [ -d "$out/pylib/tinytorch" ]; then
        PYTHONPATH="$out/pylib" "$py" "$here/scripts/bench/bench_gpu_train.py" --device cuda:0 \
            --tf32 off --json "$out/gpu_train.json" 2> "$out/gpu_train.log" \
            || { echo "bench_gpu_train.py failed (exit $?):"; echo '```'; tail -n 15 "$out/gpu_train.log"; echo '```'; }
    else
        echo "not run: the tinytorch wheel did not install (see pip.log)"
    fi
    echo
    echo "## Training: seed-cnn on 10,000 Fashion-MNIST images, 2 epochs, --device cuda"
    echo
    echo '```'
    "$bins/bin/tinytorch" train --device cuda --data "$here/data" --model seed-cnn --epochs 2 \
        --batch-size 64 --out "$out/train" --json 2>&1 | tail -n 3
    echo '```'
    echo
    echo "## Training under bf16 autocast: the same run with --amp bf16"
    echo
    echo '```'
    "$bins/bin/tinytorch" train --device cuda --data "$here/data" --model seed-cnn --epochs 2 \
        --batch-size 64 --amp bf16 --out "$out/train_bf16" --json 2>&1 | tail -n 3
    echo '```'
} >> "$summary" 2>&1

echo "summary: $summary"
exit $status
