"""Long runs with memory sampled: 10,000 training steps of the mlp and of the seed-cnn
(`tinytorch train`), 10,000 generated tokens (`tinytorch generate`) and a 10,000-step
training loop of the Python package, each watched from outside through /proc/PID/status.
After a warm-up (a training run's first epoch and evaluation, the Python loop's first 1,000
steps, generation's first second) the resident set must stay within 2% of what it was at the
end of the warm-up.

    python scripts/reliability/soak.py [--bin target/release/tinytorch] [--python PY] [--only mlp,generate]

Prints one JSON line per workload (RSS at the end of the warm-up, the highest after it, at
the end, growth in percent, samples after the warm-up) and exits non-zero if any grew by more than 2%.
Needs Fashion-MNIST (/usr/share/datasets/fashion-mnist) and fortunes (/usr/share/games/fortunes).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

PY_LOOP = r"""
import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(640, 1, 28, 28)
y = torch.randint(0, 10, (640,))
for step in range(STEPS):
    i = (step % 10) * 64
    opt.zero_grad()
    loss = F.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
    loss.backward()
    opt.step()
    if step % 1000 == 0:
        print(step, loss.item(), flush=True)
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def watch(name, cmd, warmed_up, interval=0.2):
    """Run `cmd`, sampling its RSS; `warmed_up(elapsed_s, stdout_lines)` says when the
    warm-up is over. True when the RSS stays within 2% of its value at that moment."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    warm, warm_at, after = None, None, []
    while proc.poll() is None:
        try:
            kib = rss_kib(proc.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        elapsed = time.monotonic() - t0
        if kib and warm is None and warmed_up(elapsed, lines):
            warm, warm_at = kib, elapsed
        elif kib and warm is not None:
            after.append(kib)
        time.sleep(interval)
    err = proc.communicate()[1]
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{name}: exit {proc.returncode}: {err.strip()[-500:]}")
    if warm is None or not after:
        raise SystemExit(f"{name}: ended before its warm-up did ({wall:.1f} s)")
    peak = max(after)
    result = {
        "workload": name, "wall_s": round(wall, 1), "warmup_s": round(warm_at, 1),
        "samples_after_warmup": len(after), "rss_warm_mib": round(warm / 1024, 1),
        "rss_peak_after_mib": round(peak / 1024, 1), "rss_end_mib": round(after[-1] / 1024, 1),
        "growth_pct": round(100 * (peak - warm) / warm, 2),
    }
    print(json.dumps(result), flush=True)
    return result["growth_pct"] <= 2.0


def after_first_epoch(run_dir):
    """Warm-up of a `tinytorch train` run: its first epoch and evaluation (metrics.jsonl
    gets its first line)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    return lambda _t, _lines: os.path.exists(path) and os.path.getsize(path) > 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default="target/release/tinytorch")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--only", default="mlp,seed-cnn,generate,python")
    args = p.parse_args()
    only = args.only.split(",")
    out = tempfile.mkdtemp(prefix="tinytorch-soak-")
    ok = True
    steps = str(args.steps)
    if "mlp" in only:
        ok &= watch("train mlp, 10k steps (batch 64)", [
            args.bin, "train", "--model", "mlp", "--epochs", "100", "--max-steps", steps,
            "--batch-size", "64", "--lr", "0.05", "--out", f"{out}/mlp", "--json"],
            after_first_epoch(f"{out}/mlp"))
    if "seed-cnn" in only:
        ok &= watch("train seed-cnn, 10k steps (batch 16)", [
            args.bin, "train", "--model", "seed-cnn", "--epochs", "100", "--max-steps", steps,
            "--batch-size", "16", "--lr", "0.02", "--out", f"{out}/cnn", "--json"],
            after_first_epoch(f"{out}/cnn"))
    if "generate" in only:
        corpus = f"{out}/corpus.txt"
        with open(corpus, "w") as f:
            for name in ("cookie", "fortunes", "computers"):
                path = f"/usr/share/games/fortunes/{name}"
                if os.path.exists(path):
                    f.write(open(path, encoding="utf-8", errors="replace").read())
        subprocess.run([args.bin, "train-lm", "--corpus", corpus, "--max-steps", "30",
                        "--n-layer", "2", "--n-embd", "64", "--n-head", "4",
                        "--block-size", "64", "--out", f"{out}/lm", "--json"],
                       check=True, stdout=subprocess.DEVNULL)
        ok &= watch("generate 10k tokens (KV cache)", [
            args.bin, "generate", "--checkpoint", f"{out}/lm/checkpoint.safetensors",
            "--prompt", "The ", "--max-new-tokens", steps, "--seed", "1"],
            lambda t, _lines: t > 1.0)
    if "python" in only:
        ok &= watch("Python training loop, 10k steps", [
            args.python, "-c", PY_LOOP.replace("STEPS", steps)],
            lambda _t, lines: len(lines) >= 2)
    subprocess.run(["rm", "-rf", out])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
