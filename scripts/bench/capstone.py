"""The systems-toolkit capstone: seed-cnn on Fashion-MNIST as trained (f32), pruned (50% of
each layer's weights, 90% of all weights in three rounds, and 50% of the channels removed),
quantized to int8 (static, calibrated on 1000 training images) and distilled into the MLP;
for each, test accuracy, the stored model's size, parameters (non-zero ones too), forward
latency at batch 1 and 64 with 95% confidence intervals, and the peak memory of a batch-64
forward. Every figure comes from `tinytorch eval --json --latency`; the table is written to
docs/CAPSTONE.md.

    cargo build --release -p tinytorch-cli
    python3 scripts/bench/capstone.py [--checkpoint F32_CKPT] [--epochs 10] [--work /tmp/capstone]

Takes about 35 minutes on a 2-core machine, plus 30 for training the f32 model (pass a
`tinytorch train --model seed-cnn` checkpoint with --checkpoint to skip that). Files already
in --work are kept, so a second run only measures again. Needs only Python's standard
library and the tinytorch binary.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Alternating measurement rounds over all the models.
ROUNDS = 3


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return out


def make(path, cmd, log=None):
    """Run `cmd`, which writes `path`, unless `path` exists (a rerun only measures again);
    its standard output goes to `log` when given."""
    if os.path.exists(path):
        print("have", path, flush=True)
        return
    out = run(cmd)
    if log:
        with open(log, "w") as f:
            f.write(out)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "tinytorch"))
    ap.add_argument("--work", default="/tmp/capstone")
    ap.add_argument("--checkpoint", help="a trained seed-cnn checkpoint (skips training)")
    ap.add_argument("--epochs", type=int, default=10, help="epochs of the f32 model")
    ap.add_argument("--finetune-steps", type=int, default=400,
                    help="fine-tuning steps after each pruning round")
    ap.add_argument("--distill-epochs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "CAPSTONE.md"))
    args = ap.parse_args()
    tt, work = args.bin, args.work
    os.makedirs(work, exist_ok=True)
    w = lambda name: os.path.join(work, name)  # noqa: E731

    f32 = args.checkpoint
    if f32 is None:
        f32 = os.path.join(w("f32"), "checkpoint.safetensors")
        make(f32, [tt, "train", "--model", "seed-cnn", "--epochs", str(args.epochs),
                   "--lr", "0.02", "--momentum", "0.9", "--out", w("f32")])
    finetune = ["--finetune-epochs", "1", "--max-steps", str(args.finetune_steps)]
    steps = f"{args.finetune_steps} fine-tuning steps"
    variants = [("f32", f32, "")]
    for name, method, amount, rounds, label in [
        ("pruned50", "l1", "0.5", 1, "pruned 50% (L1, per layer)"),
        ("pruned90", "global", "0.9", 3, "pruned 90% (global L1, 3 rounds)"),
        ("channels50", "ln-structured", "0.5", 1, "pruned 50% of channels (removed)"),
    ]:
        out = w(f"{name}.safetensors")
        make(out, [tt, "prune", "--checkpoint", f32, "--method", method, "--amount", amount,
                   "--rounds", str(rounds), *finetune, "--out", out])
        how = f"`prune --method {method} --amount {amount} --rounds {rounds}`, {steps}"
        variants.append((label, out, how + (" a round" if rounds > 1 else "")))
    make(w("int8.safetensors"), [tt, "quantize", "--checkpoint", f32, "--calibrate", "1000",
                                 "--out", w("int8.safetensors")])
    variants.append(("int8 (static, 1000 calibration images)", w("int8.safetensors"),
                     "`quantize --calibrate 1000`"))
    make(w("mlp.safetensors"), [tt, "distill", "--json", "--teacher", f32, "--student", "mlp",
                                "--epochs", str(args.distill_epochs),
                                "--out", w("mlp.safetensors")], log=w("distill.json"))
    with open(w("distill.json")) as f:
        alone = json.loads(f.read().strip().splitlines()[-1])["student_alone_test_acc"]
    variants.append(("distilled mlp", w("mlp.safetensors"),
                     f"`distill --student mlp --epochs {args.distill_epochs}` (the same mlp "
                     f"trained alone from the same start: {100 * alone:.2f}%)"))

    # Every model measured in each of ROUNDS alternating rounds; a model's row is its round
    # with the middle batch-64 median (the VM is noisy; one slow round does not decide).
    rounds = {name: [] for name, _, _ in variants}
    for _ in range(ROUNDS):
        for name, path, _ in variants:
            rounds[name].append(json.loads(run([tt, "eval", "--checkpoint", path, "--json",
                                                "--latency"])))
    rows = []
    for name, _, how in variants:
        ordered = sorted(rounds[name], key=lambda r: r["latency_b64"]["median_ms"])
        r = ordered[len(ordered) // 2]
        r["name"], r["how"] = name, how
        rows.append(r)
        print(name, json.dumps(r), flush=True)

    def ms(lat):
        return f"{lat['mean_ms']:.3f} ({lat['ci95_ms'][0]:.3f}–{lat['ci95_ms'][1]:.3f})"

    base = rows[0]
    lines = [
        "# Capstone: seed-cnn on Fashion-MNIST, made smaller and faster",
        "",
        f"Produced by `python3 scripts/bench/capstone.py` on {datetime.date.today()}, "
        f"{cpu_name()}, {os.cpu_count()} threads; every figure from "
        "`tinytorch eval --json --latency` on the 10,000 test images (each model measured in "
        f"{ROUNDS} alternating rounds; its row is the round with the middle batch-64 median).",
        "",
        "| model | test accuracy | Δ points | stored size | parameters (non-zero) | "
        "batch 1 ms, mean (95% CI) | batch 64 ms, mean (95% CI) | peak memory, batch 64 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {100 * r['test_acc']:.2f}% | "
            f"{100 * (r['test_acc'] - base['test_acc']):+.2f} | "
            f"{r['model_bytes'] / 1024:.1f} KB | "
            f"{r['parameters']:,} ({r['nonzero_parameters']:,}) | "
            f"{ms(r['latency_b1'])} | {ms(r['latency_b64'])} | "
            f"{r['peak_bytes_b64'] / 1e6:.2f} MB |")
    lines += [
        "",
        "How each was made from the f32 checkpoint (`tinytorch ...`):",
        "",
    ]
    lines += [f"- {r['name']}: {r['how']}" for r in rows[1:]]
    lines += [
        "",
        "Stored size: the model alone (the float state dict as safetensors, or the int8 file); "
        "unstructured pruning stores zeros densely, so only removed channels and int8 make the "
        "file smaller. Latency: forward without gradients, 200 runs at batch 1 and 30 at batch "
        "64 after 5 warm-up runs. Peak memory: the most a batch-64 forward held above what was "
        "allocated before it (activations and scratch buffers, int8 layers' included).",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("wrote", args.out)


if __name__ == "__main__":
    sys.exit(main())
