#!/usr/bin/env bash
# Fuzz every reader of outside bytes with libFuzzer (cargo fuzz, nightly toolchain), then the
# Python package's torch.load with atheris.
#
#   bash scripts/reliability/fuzz.sh                  # each target for 10 s on a quick build (what CI runs)
#   bash scripts/reliability/fuzz.sh --runs 10000000  # each target for 10 million executions, optimised
#                                         # build with AddressSanitizer and debug assertions
#   bash scripts/reliability/fuzz.sh --runs 10000000 idx cifar10   # some targets only
#   SANITIZER=none bash scripts/reliability/fuzz.sh --runs 10000000 hf_tokenizer   # optimised, no ASan
#                                         # (hf_tokenizer runs 250/s under ASan, 20,000/s without)
#
# Each target starts from its corpus fuzz/corpus/TARGET (seeded by the fuzz_seeds example)
# and fuzz/regressions/TARGET (inputs that once failed, all replayed first). An input that
# panics, crashes, runs over 10 s or allocates over 512 MiB at once (2 GiB in all) fails the
# target's run; libFuzzer saves it under fuzz/artifacts/TARGET and the script goes on to the
# next target, failing at the end. The last lines of each log (fuzz/logs/TARGET.log) are
# libFuzzer's tally: executions, edges covered (cov), features (ft), corpus size.
# torch_load runs under $PYTHON (default python3), which needs tinytorch and atheris.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUST_TARGETS=(idx cifar10 safetensors checkpoint bpe_json hf_config hf_tokenizer)
limit=(-max_total_time=10)
# CI's quick build: no optimisation (half the build time), no sanitizer, debug assertions on.
build=(--dev -s none)
if [[ "${1:-}" == "--runs" ]]; then
    limit=(-runs="$2")
    build=(-O -a -s "${SANITIZER:-address}")
    shift 2
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${RUST_TARGETS[@]}" torch_load)
python="${PYTHON:-python3}"
logs=fuzz/logs
mkdir -p "$logs"

if ! rustup toolchain list | grep -q nightly; then
    echo "fuzz.sh: no nightly toolchain: libFuzzer targets skipped (tests/fuzz_regressions.rs replays the saved inputs)"
    targets=(torch_load)
fi
# cargo-fuzz and the Rust seeds only when a Rust target runs (torch_load alone needs neither).
if [[ " ${targets[*]} " != " torch_load " ]]; then
    command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
    [[ -d fuzz/corpus/idx ]] || cargo run -q -p tinytorch --example fuzz_seeds -- fuzz/corpus
fi

failed=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/regressions/$t" "fuzz/artifacts/$t"
    dirs=("fuzz/corpus/$t" "fuzz/regressions/$t")
    if [[ "$t" == torch_load ]]; then
        cmd=("$python" fuzz/python/fuzz_torch_load.py "${dirs[@]}")
    else
        cmd=(cargo +nightly fuzz run "${build[@]}" "$t" "${dirs[@]}" --)
    fi
    echo "== fuzz $t"
    "${cmd[@]}" "${limit[@]}" \
        -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" \
        > "$logs/$t.log" 2>&1 || { tail -40 "$logs/$t.log"; failed+=("$t"); }
    grep -E "^#[0-9]+.*DONE|^Done" "$logs/$t.log" | tail -2 || true
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: failing targets: ${failed[*]} (inputs under fuzz/artifacts/)"
    exit 1
fi
