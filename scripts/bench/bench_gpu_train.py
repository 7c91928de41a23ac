#!/usr/bin/env python3
"""One Python training loop under PyTorch and under TinyTorch on one device, side by side
(issue 49's measurement; the GPU bundle's run.sh runs it on cuda:0).

A training step is what a user writes: forward, cross-entropy, backward, optimizer step and
``loss.item()`` (every step, as a training loop that logs its loss does). Each row runs the
same step, on the same initial weights (PyTorch's initialisation, copied into TinyTorch's
model through NumPy by ``load_state_dict``, as the twins exchange state dicts) and the same
NumPy-drawn batch, in float32 and under ``torch.autocast(device_type, torch.bfloat16)``:

  mlp         784-512-512-10, batch 256, SGD
  seed-cnn    the seed CNN (scripts/twins/torch_models.py), 1x28x28, batch 64, SGD
  resnet-cnn  a ResNet-style CNN (defined here): 3x32x32; 64, 128, 256 channels; BatchNorm;
              batch 128, SGD with momentum
  gpt         nanoGPT's GPT (scripts/twins/torch_gpt.py): 6 layers, d 384, 6 heads, T 256,
              vocabulary 65 (shakespeare_char's configuration), batch 16, AdamW
  resnet20    ResNet-20 (scripts/twins/torch_models.py) on 3x32x32, batch 128, SGD with momentum

Each side: ``--warmup`` steps, then ``--steps`` timed steps, the device synchronised before
each clock reading; the median ms per step; ratio = PyTorch ms / TinyTorch ms (> 1: TinyTorch
is faster). The first step's loss of both sides is compared (same weights and batch). On
CUDA, the peak of ``torch.cuda.max_memory_allocated`` over the timed steps on both sides. A
second pass (unless ``--no-phases``) times forward, loss, backward, optimizer step and
``item()`` separately, synchronising between them.

Then the per-op table: forward and forward + ``y.sum().backward()`` of single ops (conv,
batch norm, relu, linear, gelu, causal SDPA, layer norm, add) in float32, plus ``x.sum()``
alone and its backward alone.

TF32: ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32`` are
set alike on both sides (``--tf32 off``, the default: PyTorch's matmul default; ``on``: both
allowed). Whatever TinyTorch (or PyTorch) lacks for a row is caught and shown in that row
and listed at the end, so one gap does not hide the other rows.

Usage: python scripts/bench/bench_gpu_train.py [--device cuda:0|cpu] [--tf32 off|on]
       [--models mlp,seed-cnn,resnet-cnn,gpt,resnet20] [--precisions f32,bf16]
       [--steps N] [--warmup N] [--op-iters N] [--no-phases] [--no-ops] [--small]
       [--threads N] [--json [PATH]]
``--small`` shrinks batches and sequence lengths (a smoke test on a CPU); ``--json`` prints
JSON instead of markdown, ``--json PATH`` writes it to PATH besides. Needs torch, numpy and
the tinytorch package in one environment.
"""
import argparse
import contextlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TWINS = os.path.join(os.path.dirname(HERE), "twins")


# ---------------------------------------------------------------------------------------
# The two libraries and their models


def twin(lib, name):
    """scripts/twins/<name>.py, written against ``import torch``, imported with ``torch``
    meaning ``lib`` (PyTorch or TinyTorch), so both sides run the same model code."""
    path = os.path.join(TWINS, name + ".py")
    spec = importlib.util.spec_from_file_location(f"_twin_{name}_{lib.__name__}", path)
    module = importlib.util.module_from_spec(spec)
    names = ("torch", "torch.nn", "torch.nn.functional")
    saved = {n: sys.modules.get(n) for n in names}
    sys.modules.update({"torch": lib, "torch.nn": lib.nn, "torch.nn.functional": lib.nn.functional})
    try:
        spec.loader.exec_module(module)
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
    return module


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def seed_cnn(lib):
    return twin(lib, "torch_models").seed_cnn(1, 28, 28, 10)


def resnet_cnn(lib):
    """A ResNet-style CNN on 3x32x32: a 64-channel stem, one basic block at 64, 128 and 256
    channels (stride 2 and a 1x1 projection when the shape changes), BatchNorm after every
    convolution, global average pool, linear classifier."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.short is None else self.short(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU())
            self.layers = nn.Sequential(Block(64, 64, 1), Block(64, 128, 2), Block(128, 256, 2))
            self.fc = nn.Linear(256, 10)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return Net()


def resnet20(lib):
    return twin(lib, "torch_models").resnet20(3, 32, 32, 10)


VOCAB = 65  # nanoGPT's shakespeare_char


def gpt(lib, block):
    return twin(lib, "torch_gpt").GPT(VOCAB, block, 6, 6, 384)


def sgd(lib, params):
    return lib.optim.SGD(params, lr=0.05)


def sgd_momentum(lib, params):
    return lib.optim.SGD(params, lr=0.05, momentum=0.9)


def adamw(lib, params):
    return lib.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)


def model_rows(small):
    """name -> (label, build(lib), input shape, classes, optimizer): the batch and the GPT's
    context shrink with --small."""
    b = (lambda full, little: little if small else full)
    t = b(256, 32)
    return {
        "mlp": (f"mlp 784-512-512-10, batch {b(256, 32)}", mlp, (b(256, 32), 784), 10, sgd),
        "seed-cnn": (f"seed-cnn, batch {b(64, 8)}", seed_cnn, (b(64, 8), 1, 28, 28), 10, sgd),
        "resnet-cnn": (f"ResNet-style CNN 64-128-256, BatchNorm, 3x32x32, batch {b(128, 4)}",
                       resnet_cnn, (b(128, 4), 3, 32, 32), 10, sgd_momentum),
        "gpt": (f"GPT 6 layers, d 384, 6 heads, T {t}, batch {b(16, 2)}, AdamW",
                lambda lib: gpt(lib, t), (b(16, 2), t), VOCAB, adamw),
        "resnet20": (f"ResNet-20, 3x32x32, batch {b(128, 4)}", resnet20, (b(128, 4), 3, 32, 32),
                     10, sgd_momentum),
    }


# ---------------------------------------------------------------------------------------
# Timing


class Side:
    """One library on one device: its module, the device, and how to wait for it."""

    def __init__(self, name, lib, device):
        self.name, self.lib, self.device = name, lib, device
        self.cuda = device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.lib.cuda.synchronize()

    def tensor(self, array):
        """A NumPy array on this side's device (a copy: neither side shares the other's)."""
        return self.lib.from_numpy(np.ascontiguousarray(array).copy()).to(self.device)

    def autocast(self, precision):
        if precision == "f32":
            return contextlib.nullcontext()
        return self.lib.autocast(self.device.split(":")[0], dtype=self.lib.bfloat16)

    def reset_peak(self):
        if self.cuda:
            self.lib.cuda.reset_peak_memory_stats()

    def peak_mib(self):
        return self.lib.cuda.max_memory_allocated() / 2 ** 20 if self.cuda else None

    def release(self):
        if self.cuda:
            self.lib.cuda.empty_cache()


def time_ms(side, fn, warmup, iters, setup=None):
    """Median ms of ``fn(setup())`` (setup untimed), the device synchronised before each
    clock reading."""
    for _ in range(warmup):
        fn(setup() if setup else None)
    side.sync()
    times = []
    for _ in range(iters):
        arg = setup() if setup else None
        side.sync()
        t = time.perf_counter()
        fn(arg)
        side.sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def snapshot(model):
    """A model's initial weights and buffers as NumPy arrays (taken before PyTorch trains it)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def load_snapshot(lib, model, state):
    """Load PyTorch's initial weights (and buffers) into the TinyTorch model, through NumPy."""
    model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})


def train_row(sides, key, precision, args):
    """Time one model in one precision on both sides; a dict of results (None where a side
    failed, its error in ``errors``)."""
    label, build, shape, classes, make_opt = model_rows(args.small)[key]
    rng = np.random.default_rng(0)
    if key == "gpt":
        x_np = rng.integers(0, VOCAB, shape, dtype=np.int64)
        y_np = rng.integers(0, VOCAB, shape, dtype=np.int64)
    else:
        x_np = rng.standard_normal(shape, dtype=np.float32)
        y_np = rng.integers(0, classes, shape[:1], dtype=np.int64)
    row = {"model": key, "label": label, "precision": precision, "errors": {}}
    init = None  # PyTorch's initial state, copied into TinyTorch's model
    for side in sides:
        r = row.setdefault(side.name, {})
        try:
            lib, F = side.lib, side.lib.nn.functional
            if side.name == "pytorch":
                lib.manual_seed(0)
                model = build(lib)
                init = snapshot(model)
            else:
                model = build(lib)
                if init is None:
                    raise RuntimeError("no PyTorch model to copy the weights from")
                load_snapshot(lib, model, init)
            model = model.to(side.device)
            model.train()
            opt = make_opt(lib, model.parameters())
            x, y = side.tensor(x_np), side.tensor(y_np)
            amp = lambda: side.autocast(precision)  # noqa: E731

            def loss_of(logits):
                return F.cross_entropy(logits.reshape(-1, classes), y.reshape(-1))

            def step(_=None):
                opt.zero_grad(set_to_none=True)
                with amp():
                    loss = loss_of(model(x))
                loss.backward()
                opt.step()
                return loss.item()

            r["first_loss"] = step()
            for _ in range(args.warmup - 1):
                step()
            side.sync()
            side.reset_peak()
            r["ms"] = time_ms(side, step, 0, args.steps)
            r["peak_mib"] = side.peak_mib()
            if not args.no_phases:
                r["phases"] = phase_ms(side, model, opt, x, amp, loss_of, args.steps)
            del model, opt, x, y
        except Exception as e:  # noqa: BLE001 (a row reports what failed and goes on)
            row["errors"][side.name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            if args.verbose:
                traceback.print_exc()
        side.release()
    pt, tt = row.get("pytorch", {}), row.get("tinytorch", {})
    if "ms" in pt and "ms" in tt:
        row["ratio"] = pt["ms"] / tt["ms"]
    if "first_loss" in pt and "first_loss" in tt:
        tol = 2e-2 if precision == "bf16" else (2e-3 if args.tf32 == "on" else 1e-4)
        a, b = pt["first_loss"], tt["first_loss"]
        row["loss_ok"] = abs(a - b) <= tol * max(1.0, abs(a))
    return row


PHASES = ("forward", "loss", "backward", "step", "item")


def phase_ms(side, model, opt, x, amp, loss_of, steps):
    """Median ms of each part of the step, the device synchronised between the parts."""
    times = {p: [] for p in PHASES}

    def mark(name, t0):
        side.sync()
        t1 = time.perf_counter()
        times[name].append((t1 - t0) * 1e3)
        return t1

    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        side.sync()
        t = time.perf_counter()
        with amp():
            logits = model(x)
            t = mark("forward", t)
            loss = loss_of(logits)
            t = mark("loss", t)
        loss.backward()
        t = mark("backward", t)
        opt.step()
        t = mark("step", t)
        loss.item()
        mark("item", t)
    return {p: statistics.median(v) for p, v in times.items()}


# ---------------------------------------------------------------------------------------
# Per-op table


def op_rows(small):
    """name -> (label, make(side, rng) -> (forward closure, leaf tensors)). The forward
    closure returns the output; the backward row adds ``y.sum().backward()``."""
    b = (lambda full, little: little if small else full)
    n, rows, seq, batch = b(128, 4), b(4096, 256), b(256, 64), b(16, 2)

    def module_op(build, shape):
        def make(side, rng, init):
            lib = side.lib
            if side.name == "pytorch":
                lib.manual_seed(0)
                m = build(lib)
                init.update(snapshot(m))
            else:
                m = build(lib)
                load_snapshot(lib, m, init)
            m = m.to(side.device)
            x = side.tensor(rng(shape)).requires_grad_(True)
            return (lambda: m(x)), [x] + list(m.parameters())
        return make

    def fn_op(fn, *shapes):
        def make(side, rng, _):
            xs = [side.tensor(rng(s)).requires_grad_(True) for s in shapes]
            return (lambda: fn(side.lib, *xs)), xs
        return make

    def sdpa(lib, q, k, v):
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    conv_shape, bn_shape = (n, 64, 32, 32), (n, 64, 32, 32)
    qkv = (batch, 6, seq, 64)
    return {
        "conv": (f"conv2d 3x3 64->64, {'x'.join(map(str, conv_shape))}",
                 module_op(lambda lib: lib.nn.Conv2d(64, 64, 3, padding=1), conv_shape)),
        "batch_norm": (f"BatchNorm2d (training), {'x'.join(map(str, bn_shape))}",
                       module_op(lambda lib: lib.nn.BatchNorm2d(64), bn_shape)),
        "relu": (f"relu, {'x'.join(map(str, bn_shape))}", fn_op(lambda lib, x: lib.relu(x), bn_shape)),
        "linear": (f"linear {rows}x384 -> 1536",
                   module_op(lambda lib: lib.nn.Linear(384, 1536), (rows, 384))),
        "gelu": (f"gelu, {rows}x1536", fn_op(lambda lib, x: lib.nn.functional.gelu(x), (rows, 1536))),
        "sdpa": (f"causal SDPA, B{batch} H6 T{seq} D64", fn_op(sdpa, qkv, qkv, qkv)),
        "layer_norm": (f"layer norm, {rows}x384",
                       module_op(lambda lib: lib.nn.LayerNorm(384), (rows, 384))),
        "add": (f"add, {rows}x384 + {rows}x384", fn_op(lambda lib, a, c: a + c, (rows, 384), (rows, 384))),
        "sum": (f"sum() alone, {'x'.join(map(str, bn_shape))}", fn_op(lambda lib, x: x.sum(), bn_shape)),
    }


def op_row(sides, key, args):
    label, make = op_rows(args.small)[key]
    row = {"op": key, "label": label, "errors": {}}
    init = {}  # PyTorch's initial weights of a module op
    for side in sides:
        r = row.setdefault(side.name, {})
        try:
            rng = np.random.default_rng(1)
            forward, leaves = make(side, lambda s: rng.standard_normal(s, dtype=np.float32), init)

            def clear(_=None):
                for t in leaves:
                    t.grad = None

            r["fwd_ms"] = time_ms(side, lambda _: forward(), 3, args.op_iters)
            if key == "sum":
                # The backward of a full reduction alone: the forward (untimed) builds a
                # fresh graph each time.
                def setup():
                    clear()
                    return forward()
                r["bwd_ms"] = time_ms(side, lambda s: s.backward(), 3, args.op_iters, setup)
            else:
                r["fwd_bwd_ms"] = time_ms(side, lambda _: forward().sum().backward(), 3,
                                          args.op_iters, clear)
            del forward, leaves
        except Exception as e:  # noqa: BLE001
            row["errors"][side.name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            if args.verbose:
                traceback.print_exc()
        side.release()
    pt, tt = row["pytorch"], row["tinytorch"]
    for k in ("fwd_ms", "fwd_bwd_ms", "bwd_ms"):
        if k in pt and k in tt:
            row[k.replace("_ms", "_ratio")] = pt[k] / tt[k]
    return row


# ---------------------------------------------------------------------------------------
# Output


def fmt(v, digits=3):
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if abs(v) < 100 else f"{v:.1f}"


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def markdown(result):
    out = [f"Device {result['device']} ({result['device_name']}); PyTorch {result['torch']}; "
           f"TF32 {result['tf32']}; medians of {result['steps']} steps after {result['warmup']} "
           f"warm-up steps; ratio = PyTorch ms / TinyTorch ms (> 1: TinyTorch is faster).", ""]
    if result["train"]:
        out += ["| model | precision | PyTorch ms | TinyTorch ms | ratio | first loss PyTorch / TinyTorch | "
                "peak MiB PyTorch / TinyTorch |", "|---|---|---:|---:|---:|---|---|"]
        for r in result["train"]:
            pt, tt = r.get("pytorch", {}), r.get("tinytorch", {})
            loss = f"{fmt(pt.get('first_loss'), 4)} / {fmt(tt.get('first_loss'), 4)}"
            if "loss_ok" in r and not r["loss_ok"]:
                loss += " **DIFFER**"
            mem = "-" if pt.get("peak_mib") is None and tt.get("peak_mib") is None else \
                f"{fmt(pt.get('peak_mib'), 1)} / {fmt(tt.get('peak_mib'), 1)}"
            tt_ms = fmt(tt.get("ms")) if "ms" in tt else f"error: {r['errors'].get('tinytorch', '?')}"
            pt_ms = fmt(pt.get("ms")) if "ms" in pt else f"error: {r['errors'].get('pytorch', '?')}"
            out.append(f"| {r['label']} | {r['precision']} | {pt_ms} | {tt_ms} | {fmt(r.get('ratio'), 2)} | "
                       f"{loss} | {mem} |")
        g = result.get("train_geomean")
        out += ["", f"Geometric mean of the step ratios: {fmt(g, 2)}"]
        if any("phases" in r.get("tinytorch", {}) for r in result["train"]):
            out += ["", "Parts of a step, synchronised between them (ms, PyTorch / TinyTorch):", "",
                    "| model | precision | " + " | ".join(PHASES) + " |",
                    "|---|---|" + "---:|" * len(PHASES)]
            for r in result["train"]:
                pt, tt = r.get("pytorch", {}).get("phases"), r.get("tinytorch", {}).get("phases")
                if pt and tt:
                    cells = [f"{fmt(pt[p])} / {fmt(tt[p])}" for p in PHASES]
                    out.append(f"| {r['model']} | {r['precision']} | " + " | ".join(cells) + " |")
    if result["ops"]:
        out += ["", "Per op, float32 (ms; ratio = PyTorch / TinyTorch):", "",
                "| op | forward PyTorch | forward TinyTorch | ratio | fwd+bwd PyTorch | fwd+bwd TinyTorch | ratio |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for r in result["ops"]:
            pt, tt = r.get("pytorch", {}), r.get("tinytorch", {})
            if r["errors"]:
                err = "; ".join(f"{k}: {v}" for k, v in r["errors"].items())
                out.append(f"| {r['label']} | error: {err} | | | | | |")
                continue
            key, what = ("bwd", "backward alone") if r["op"] == "sum" else ("fwd_bwd", "")
            bwd = f"{fmt(pt.get(key + '_ms'))}" + (f" ({what})" if what else "")
            out.append(f"| {r['label']} | {fmt(pt['fwd_ms'])} | {fmt(tt['fwd_ms'])} | {fmt(r.get('fwd_ratio'), 2)} | "
                       f"{bwd} | {fmt(tt.get(key + '_ms'))} | {fmt(r.get(key + '_ratio'), 2)} |")
        g = result.get("ops_geomean")
        out += ["", f"Geometric mean of the forward+backward ratios: {fmt(g, 2)}"]
    errors = [(r.get("label"), r.get("precision", ""), side, e)
              for r in result["train"] + result["ops"] for side, e in r["errors"].items()]
    if errors:
        out += ["", "Failures (what a side lacks or got wrong):", ""]
        out += [f"- {side}, {label} {prec}: {e}" for label, prec, side, e in errors]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--tf32", choices=("off", "on"), default="off")
    ap.add_argument("--models", default="mlp,seed-cnn,resnet-cnn,gpt,resnet20")
    ap.add_argument("--precisions", default="f32,bf16")
    ap.add_argument("--steps", type=int, default=None, help="timed steps (default 20 on CUDA, 5 on CPU)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up steps, the first one's loss compared")
    ap.add_argument("--op-iters", type=int, default=None, help="timed calls per op (default 50 on CUDA, 5 on CPU)")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-part timing of the steps")
    ap.add_argument("--no-ops", action="store_true", help="skip the per-op table")
    ap.add_argument("--ops", default=None, help="comma-separated subset of the op rows")
    ap.add_argument("--small", action="store_true", help="small batches (a smoke test on a CPU)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads of both sides")
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    help="print JSON instead of markdown (or, with PATH, also write it there)")
    ap.add_argument("--verbose", action="store_true", help="print the traceback of each failure")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    args.steps = args.steps or (20 if cuda else 5)
    args.op_iters = args.op_iters or (50 if cuda else 5)
    args.warmup = max(1, args.warmup)
    if args.threads:
        os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # before tinytorch starts its pool

    import torch
    import tinytorch

    if args.threads:
        torch.set_num_threads(args.threads)
    for lib in (torch, tinytorch):
        lib.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
        lib.backends.cudnn.allow_tf32 = args.tf32 == "on"
    sides = [Side("pytorch", torch, args.device), Side("tinytorch", tinytorch, args.device)]
    if cuda and not (torch.cuda.is_available() and tinytorch.cuda.is_available()):
        sys.exit(f"--device {args.device}: CUDA available to PyTorch: {torch.cuda.is_available()}, "
                 f"to TinyTorch: {tinytorch.cuda.is_available()} (a build with --features cuda?)")
    result = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if cuda else f"{os.cpu_count()} CPU cores",
        "torch": torch.__version__, "tf32": args.tf32, "steps": args.steps, "warmup": args.warmup,
        "small": args.small, "train": [], "ops": [],
    }
    rows = model_rows(args.small)
    for key in [m for m in args.models.split(",") if m]:
        if key not in rows:
            sys.exit(f"unknown model {key!r}: one of {', '.join(rows)}")
        for precision in [p for p in args.precisions.split(",") if p]:
            if precision not in ("f32", "bf16"):
                sys.exit(f"unknown precision {precision!r}: f32 or bf16")
            result["train"].append(train_row(sides, key, precision, args))
            print(f"done: {key} {precision}", file=sys.stderr, flush=True)
    result["train_geomean"] = geomean([r.get("ratio") for r in result["train"]])
    if not args.no_ops:
        ops = op_rows(args.small)
        for key in (args.ops.split(",") if args.ops else ops):
            result["ops"].append(op_row(sides, key, args))
            print(f"done: op {key}", file=sys.stderr, flush=True)
        result["ops_geomean"] = geomean([r.get("fwd_bwd_ratio") for r in result["ops"]])
    if args.json and args.json != "-":
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1) if args.json == "-" else markdown(result))


if __name__ == "__main__":
    main()
