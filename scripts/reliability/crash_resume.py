"""Crash safety of `tinytorch train`, scripted: kill -9 at random moments of training,
checkpointing and `--resume`, then check that the last checkpoint always loads and that
resuming from it ends bit-identical to a run that was never interrupted.

    python scripts/reliability/crash_resume.py --tries 100 [--bin target/release/tinytorch]

Each try starts a run in a fresh directory and kills it (SIGKILL) after a random delay;
while the run is unfinished it resumes from the checkpoint left behind — and, half of the
time, kills the resumed process too (a crash while loading or while training again). When
a run finishes, its checkpoint's tensors (model, optimizer state) and its position (epoch,
step, generator states) must equal the uninterrupted run's bit for bit. The data: a small
MNIST-format set written here (64 training images, batch 16: an epoch is 4 steps and ends
with a checkpoint; 60 epochs, so most kills land in training, evaluation and saving rather
than in the start-up). Standard
library only.
"""

import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time


def write_idx(path, dims, data):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data)


def synthetic_mnist(d):
    for split, n in (("train", 64), ("t10k", 32)):
        images, labels = bytearray(), bytearray()
        for i in range(n):
            label = (i * 7 + i // 10) % 10
            labels.append(label)
            cy, cx = (label // 4) * 7, (label % 4) * 7
            for y in range(28):
                for x in range(28):
                    inside = cy <= y < cy + 7 and cx <= x < cx + 7
                    noise = (((i * 31 + y * 28 + x) * 2654435761) >> 24) % 256 // 4
                    images.append(200 + noise // 2 if inside else noise)
        write_idx(os.path.join(d, f"{split}-images-idx3-ubyte"), [n, 28, 28], bytes(images))
        write_idx(os.path.join(d, f"{split}-labels-idx1-ubyte"), [n], bytes(labels))


def read_checkpoint(path):
    """(tensors name -> (dtype, shape, bytes), position) of a safetensors checkpoint; raises
    ValueError when the file does not parse."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{len(raw)} bytes")
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__")
    if meta.get("format") != "tinytorch.checkpoint":
        raise ValueError("not a checkpoint")
    data = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        if b > len(data):
            raise ValueError(f"{name} runs past the end")
        tensors[name] = (info["dtype"], tuple(info["shape"]), data[a:b])
    body = json.loads(meta["checkpoint"])
    position = {k: body[k] for k in ("epoch", "step", "rng")}
    position["batch_in_epoch"] = body["extra"]["batch_in_epoch"]
    return tensors, position


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=100)
    p.add_argument("--bin", default="target/release/tinytorch")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="tinytorch-crash-")
    data = os.path.join(work, "data")
    os.makedirs(data)
    synthetic_mnist(data)

    def command(out, resume=None):
        cmd = [args.bin, "train", "--dataset", "mnist", "--data", data, "--model", "mlp",
               "--batch-size", "16", "--lr", "0.1", "--momentum", "0.9", "--seed", "3",
               "--epochs", str(args.epochs), "--out", out, "--json"]
        if resume:
            cmd = [args.bin, "train", "--resume", resume, "--data", data,
                   "--epochs", str(args.epochs), "--out", out, "--json"]
        return cmd

    ref_dir = os.path.join(work, "reference")
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run(command(ref_dir), check=True, stdout=subprocess.DEVNULL)
        times.append(time.monotonic() - t0)
    whole_s = sorted(times)[1]
    ref = read_checkpoint(os.path.join(ref_dir, "checkpoint.safetensors"))
    print(f"uninterrupted run: {whole_s:.2f} s, {args.epochs} epochs, step {ref[1]['step']}")

    stats = {"kills": 0, "kills_in_resume": 0, "kills_after_a_checkpoint": 0, "resumes": 0,
             "fresh_restarts": 0, "leftover_temp_files": 0}
    failures = []
    for t in range(args.tries):
        out = os.path.join(work, f"try{t}")
        ckpt = os.path.join(out, "checkpoint.safetensors")
        first = True
        while True:
            resume = ckpt if os.path.exists(ckpt) else None
            if resume:
                try:
                    read_checkpoint(resume)
                except Exception as e:  # noqa: BLE001 - any failure to parse is the defect
                    failures.append(f"try {t}: the checkpoint left by a kill does not load: {e}")
                    break
                stats["resumes"] += 1
            elif not first:
                stats["fresh_restarts"] += 1
            proc = subprocess.Popen(command(out, resume), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            # The first process is always killed; a resumed one half of the time.
            if first or rng.random() < 0.5:
                time.sleep(rng.uniform(0, 0.95 * whole_s))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    stats["kills"] += 1
                    stats["kills_in_resume"] += 0 if first else 1
                    proc.wait()
                    # Where the kill landed: before the run's first checkpoint, or after it
                    # (training, evaluating or saving; the checkpoint then holds the last
                    # completed epoch).
                    stats["kills_after_a_checkpoint"] += os.path.exists(ckpt)
            first = False
            _, err = proc.communicate()
            if proc.returncode == 0:
                break
            if proc.returncode != -signal.SIGKILL:
                failures.append(f"try {t}: exit {proc.returncode}: {err.decode().strip()}")
                break
        if failures and failures[-1].startswith(f"try {t}:"):
            continue
        got = read_checkpoint(ckpt)
        if got[1] != ref[1]:
            failures.append(f"try {t}: position {got[1]} differs from {ref[1]}")
        bad = [k for k in ref[0] if got[0].get(k) != ref[0][k]] + sorted(set(got[0]) - set(ref[0]))
        if bad:
            failures.append(f"try {t}: tensors differ from the uninterrupted run: {bad[:5]}")
        stats["leftover_temp_files"] += sum(".tmp-" in f for f in os.listdir(out))
        shutil.rmtree(out)
        print(f"try {t + 1}/{args.tries}: ok" if not bad and got[1] == ref[1] else
              f"try {t + 1}/{args.tries}: FAILED", flush=True)
    shutil.rmtree(work)
    print(json.dumps({"tries": args.tries, "failures": len(failures), **stats}))
    for f in failures:
        print(f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
