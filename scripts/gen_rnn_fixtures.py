# Regenerate with: python scripts/gen_rnn_fixtures.py  (torch 2.15 CPU)
"""PyTorch reference values for TinyTorch's recurrent layers (tinytorch/tests/rnn.rs).

Writes tinytorch/tests/fixtures/rnn.safetensors. For each case `<case>` the file holds

    <case>.param.<name>       the module's state_dict (PyTorch's names)
    <case>.x, <case>.h0, <case>.c0       input and initial states (states only when given)
    <case>.out, <case>.h_n, <case>.c_n   forward results
    <case>.grad.x, <case>.grad.h0, <case>.grad.c0, <case>.grad.param.<name>
                              gradients of  out.sum() + h_n.pow(2).sum() (+ c_n.pow(2).sum())

Cells (`rnncell_*`, `lstmcell`, `grucell`) store `h_n` (and `c_n`) for the new state and
use loss `h'.sum() + h'.pow(2).sum()` (+ `c'.pow(2).sum()`).

The case configurations are repeated in the Rust test (CASES / CELL_CASES); keep them in step.
CI never runs this script: it only reads the committed fixture file.
"""

import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "tinytorch", "tests", "fixtures", "rnn.safetensors")

INPUT, HIDDEN, LAYERS, SEQ, BATCH = 3, 4, 2, 4, 2

# (name, kind, batch_first, bidirectional, with_h0, unbatched)
CASES = []
for kind in ["rnn_tanh", "rnn_relu", "lstm", "gru"]:
    CASES += [
        (f"{kind}.seq", kind, False, False, False, False),
        (f"{kind}.seq_h0", kind, False, False, True, False),
        (f"{kind}.bf", kind, True, False, False, False),
        (f"{kind}.bf_h0", kind, True, False, True, False),
        (f"{kind}.unbatched_h0", kind, False, False, True, True),
        (f"{kind}.bidir_h0", kind, True, True, True, False),
    ]

# (name, kind, with_h, unbatched)
CELL_CASES = []
for kind in ["rnncell_tanh", "rnncell_relu", "lstmcell", "grucell"]:
    CELL_CASES += [(f"{kind}.h", kind, True, False), (f"{kind}.unbatched", kind, False, True)]

TENSORS = {}


def put(name, t):
    TENSORS[name] = t.detach().to(torch.float32).contiguous().clone()


def make_module(kind, batch_first, bidirectional):
    kw = dict(num_layers=LAYERS, batch_first=batch_first, bidirectional=bidirectional)
    if kind.startswith("rnn_"):
        return torch.nn.RNN(INPUT, HIDDEN, nonlinearity=kind[4:], **kw)
    if kind == "lstm":
        return torch.nn.LSTM(INPUT, HIDDEN, **kw)
    return torch.nn.GRU(INPUT, HIDDEN, **kw)


def leaf(shape):
    return torch.randn(shape).requires_grad_(True)


def sequence_case(name, kind, batch_first, bidirectional, with_h0, unbatched):
    m = make_module(kind, batch_first, bidirectional)
    dirs = 2 if bidirectional else 1
    if unbatched:
        x, state_shape = leaf((SEQ, INPUT)), (LAYERS * dirs, HIDDEN)
    elif batch_first:
        x, state_shape = leaf((BATCH, SEQ, INPUT)), (LAYERS * dirs, BATCH, HIDDEN)
    else:
        x, state_shape = leaf((SEQ, BATCH, INPUT)), (LAYERS * dirs, BATCH, HIDDEN)
    lstm = kind == "lstm"
    h0 = leaf(state_shape) if with_h0 else None
    c0 = leaf(state_shape) if with_h0 and lstm else None
    if lstm:
        out, (h_n, c_n) = m(x, (h0, c0)) if with_h0 else m(x)
    else:
        out, h_n = m(x, h0) if with_h0 else m(x)
        c_n = None
    loss = out.sum() + h_n.pow(2).sum()
    if c_n is not None:
        loss = loss + c_n.pow(2).sum()
    loss.backward()
    store(name, m, x, h0, c0, out, h_n, c_n)


def cell_case(name, kind, with_h, unbatched):
    if kind.startswith("rnncell_"):
        m = torch.nn.RNNCell(INPUT, HIDDEN, nonlinearity=kind[8:])
    elif kind == "lstmcell":
        m = torch.nn.LSTMCell(INPUT, HIDDEN)
    else:
        m = torch.nn.GRUCell(INPUT, HIDDEN)
    x = leaf((INPUT,) if unbatched else (BATCH, INPUT))
    state_shape = (HIDDEN,) if unbatched else (BATCH, HIDDEN)
    lstm = kind == "lstmcell"
    h0 = leaf(state_shape) if with_h else None
    c0 = leaf(state_shape) if with_h and lstm else None
    if lstm:
        h, c = m(x, (h0, c0)) if with_h else m(x)
    else:
        h, c = (m(x, h0) if with_h else m(x)), None
    loss = h.sum() + h.pow(2).sum()
    if c is not None:
        loss = loss + c.pow(2).sum()
    loss.backward()
    store(name, m, x, h0, c0, None, h, c)


def store(name, m, x, h0, c0, out, h_n, c_n):
    for pname, p in m.named_parameters():
        put(f"{name}.param.{pname}", p)
        put(f"{name}.grad.param.{pname}", p.grad)
    put(f"{name}.x", x)
    put(f"{name}.grad.x", x.grad)
    for key, t in [("h0", h0), ("c0", c0)]:
        if t is not None:
            put(f"{name}.{key}", t)
            put(f"{name}.grad.{key}", t.grad)
    for key, t in [("out", out), ("h_n", h_n), ("c_n", c_n)]:
        if t is not None:
            put(f"{name}.{key}", t)


def main():
    torch.manual_seed(0)
    for case in CASES:
        sequence_case(*case)
    for case in CELL_CASES:
        cell_case(*case)
    save_file(TENSORS, OUT)
    print(f"wrote {len(TENSORS)} tensors, {os.path.getsize(OUT)} bytes to {OUT}")


if __name__ == "__main__":
    main()
