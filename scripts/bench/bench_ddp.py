"""Data-parallel throughput on this machine: seed-cnn on Fashion-MNIST, 1 and 2 processes of
one thread each, batch 32 per process, TinyTorch (`mpirun -np N tinytorch train
--distributed`, MPI) against PyTorch DDP (gloo, `torchrun --nproc_per_node N`, the same model,
optimizer and batch), alternated, REPEATS times each; prints the medians, the ratio
(PyTorch time / TinyTorch time for the same samples) and TinyTorch's gradient communication
per step. Usage: python scripts/bench/bench_ddp.py [path/to/tinytorch] (built with --features mpi)."""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "/usr/share/datasets/fashion-mnist"
STEPS, BATCH, REPEATS = 120, 32, 3
ENV = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")


def last_json(text):
    return json.loads([l for l in text.splitlines() if l.startswith("{")][-1])


def tinytorch(exe, ranks):
    cmd = [exe, "train", "--model", "seed-cnn", "--batch-size", str(BATCH), "--epochs", "1",
           "--max-steps", str(STEPS), "--lr", "0.05", "--momentum", "0.9", "--no-eval", "--json",
           "--workers", "0", "--out", f"/tmp/bench_ddp_{ranks}"]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + cmd + ["--distributed"]
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True).stdout
    j = last_json(out)
    return j["samples_per_s"], j.get("comm_s_per_step")


def pytorch(ranks):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = [torchrun, "--nproc_per_node", str(ranks), "--master_addr", "127.0.0.1",
           "--master_port", "29533", os.path.join(ROOT, "scripts", "bench", "torch_ddp_worker.py"),
           DATA, str(STEPS), str(BATCH)]
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True).stdout
    return last_json(out)["samples_per_s"]


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "tinytorch")
    print(f"seed-cnn, batch {BATCH} per process, {STEPS} steps, 1 thread per process, median of {REPEATS}")
    print("| processes | TinyTorch samples/s | PyTorch DDP (gloo) samples/s | ratio | TinyTorch comm/step |")
    print("|---|---|---|---|---|")
    for ranks in (1, 2):
        ours, theirs, comm = [], [], []
        for _ in range(REPEATS):
            s, c = tinytorch(exe, ranks)
            ours.append(s)
            comm.append(c or 0.0)
            theirs.append(pytorch(ranks))
        o, t = statistics.median(ours), statistics.median(theirs)
        c = f"{statistics.median(comm) * 1e3:.2f} ms" if ranks > 1 else "-"
        print(f"| {ranks} | {o:.0f} | {t:.0f} | {o / t:.2f} | {c} |", flush=True)


if __name__ == "__main__":
    main()
