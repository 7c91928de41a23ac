# Regenerate with: python scripts/gen_fixtures.py  (torch 2.15 CPU; writes tinytorch/tests/fixtures/ops.safetensors)
"""PyTorch reference values for TinyTorch's op table (tinytorch/tests/op_table.rs).

One list of cases. Each case has a name (`<op>__<variant>__<dtype>`), an op name (the
TinyTorch method it exercises), inputs generated deterministically from a per-case seed in a
per-op domain, and keyword arguments. For each case the safetensors file holds

    <case>.in0, <case>.in1, ...     inputs
    <case>.out, <case>.out1, ...    forward outputs (tuple outputs get out1, out2, ...)
    <case>.gout, <case>.gout1, ...  a fixed upstream gradient for each float output (grad cases)
    <case>.grad0, <case>.grad2, ... PyTorch's gradient for each float input (grad cases)

and `__metadata__[<case>]` is JSON `{"op": ..., "kwargs": {...}}`. Scalars in kwargs that are
integral are passed to PyTorch as Python ints, and stored that way (`2`, not `2.0`): the op
table reads a number without '.' or an exponent as an integer `Scalar`, any other as a float
one, so that `int_tensor * 2` stays integral and `int_tensor * 2.5` is a float, as in PyTorch.

CI never runs this script: it only reads the committed fixture file.
"""

import json
import os
import zlib

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(__file__), "..", "tinytorch", "tests", "fixtures", "ops.safetensors")

BOOL, U8, I64 = torch.bool, torch.uint8, torch.int64
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
FLOATS = [F16, BF16, F32, F64]
INTS = [BOOL, U8, I64]
ALL = INTS + FLOATS
SHORT = {BOOL: "bool", U8: "u8", I64: "i64", F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}

TENSORS = {}
META = {}


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def make_input(shape, dtype, domain, g):
    """Deterministic values of `shape` in `domain`, exactly representable in `dtype`."""
    n = 1
    for s in shape:
        n *= s
    if domain == "mask":
        return (torch.rand(shape, generator=g, dtype=F64) < 0.5).to(dtype)
    if domain.startswith("idx:"):  # integer indices in [0, N)
        return torch.randint(0, int(domain[4:]), shape, generator=g).to(dtype)
    if domain.startswith("perm:"):  # along the last dim, a permutation prefix of range(N)
        m = int(domain[5:])
        rows = [torch.randperm(m, generator=g)[: shape[-1]] for _ in range(n // max(shape[-1], 1))]
        return (torch.stack(rows) if rows else torch.zeros(0, dtype=I64)).reshape(shape).to(dtype)
    if domain == "distinct":
        v = (torch.randperm(n, generator=g).to(F64) - n // 2).reshape(shape)
        return (v * 0.25 if dtype.is_floating_point else v).to(dtype) if dtype != U8 else (v + n).to(U8)
    u = torch.rand(shape, generator=g, dtype=F64)
    sign = torch.randint(0, 2, shape, generator=g).to(F64) * 2 - 1
    if not dtype.is_floating_point:
        if dtype == BOOL:
            if domain in ("pos", "nonzero"):
                return torch.ones(shape, dtype=BOOL)
            return torch.randint(0, 2, shape, generator=g).to(BOOL)
        lo, hi = {
            "pos": (1, 6), "pow_base": (0, 4), "pow_exp": (0, 4), "cast": (0, 10),
        }.get(domain, (0, 10) if dtype == U8 else (-5, 6))
        v = torch.randint(lo, hi, shape, generator=g)
        if domain == "nonzero":
            v = torch.randint(1, 6, shape, generator=g) * (1 if dtype == U8 else sign.to(I64))
        return v.to(dtype)
    k = torch.randint(-3, 3, shape, generator=g).to(F64)
    if domain == "any":
        v = u * 4 - 2
    elif domain == "pos":
        v = u * 2 + 0.5
    elif domain == "nonzero":  # away from the kink at 0
        v = sign * (0.3 + 1.7 * u)
    elif domain == "unit":
        v = u * 1.8 - 0.9
    elif domain == "small":
        v = u * 2.4 - 1.2
    elif domain == "grid":  # few distinct values so that ties and equalities occur
        v = torch.randint(-4, 5, shape, generator=g).to(F64) / 2
    elif domain == "frac":  # away from integers and from halves (floor/ceil/round kinks)
        v = k + 0.1 + 0.3 * u + 0.5 * torch.randint(0, 2, shape, generator=g).to(F64)
    elif domain == "clamp":  # away from the clamp bounds +-0.5
        v = sign * torch.where(u < 0.5, u * 0.8, 0.6 + (u - 0.5) * 2.8)
    elif domain == "cast":
        v = u * 9.9
    elif domain == "pow_base":
        v = u * 1.5 + 0.5
    elif domain == "pow_exp":
        v = u * 4 - 2
    elif domain == "prod":
        v = sign * (0.5 + u)
    else:
        raise ValueError(domain)
    return v.to(dtype)


def as_list(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return list(out)


def py_scalar(v):
    """Integral floats become ints (see the module docs)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def add_case(name, op, fn, inputs, kwargs, grad):
    assert name not in META, name
    g = torch.Generator().manual_seed(seed_of(name))
    ins = [make_input(shape, dt, dom, g) for (shape, dt, dom) in inputs]
    leaves = [x.clone().requires_grad_(grad and x.dtype.is_floating_point) for x in ins]
    pykw = {k: py_scalar(v) for k, v in kwargs.items()}
    outs = as_list(fn(*leaves, **pykw))
    for i, x in enumerate(ins):
        TENSORS[f"{name}.in{i}"] = x.contiguous()
    for i, o in enumerate(outs):
        TENSORS[f"{name}.out" + (str(i) if i else "")] = o.detach().contiguous().clone()
    diff_in = [i for i, x in enumerate(leaves) if x.requires_grad]
    diff_out = [i for i, o in enumerate(outs) if o.requires_grad]
    if grad and diff_in and diff_out:
        gouts = []
        for i in diff_out:
            go = make_input(outs[i].shape, outs[i].dtype, "any", g)
            TENSORS[f"{name}.gout" + (str(i) if i else "")] = go
            gouts.append(go)
        grads = torch.autograd.grad(
            [outs[i] for i in diff_out], [leaves[i] for i in diff_in], gouts, allow_unused=True
        )
        for i, gr in zip(diff_in, grads):
            gr = torch.zeros_like(leaves[i]) if gr is None else gr
            TENSORS[f"{name}.grad{i}"] = gr.detach().contiguous().clone()
    META[name] = json.dumps({"op": op, "kwargs": pykw}, separators=(",", ":"), sort_keys=True)


def add_op(op, fn, variants, dtypes, domains=("any",), grad=True, in_dtypes=None, wide=(F32, F64)):
    """Cases for `op`: the first variant in every dtype of `dtypes`, the others in the dtypes
    of `wide` that the op accepts (or its first dtype). A variant is (name, shapes, kwargs);
    `domains` gives each input's domain, `in_dtypes(dtype)` each input's dtype."""
    for vi, (vname, shapes, kwargs) in enumerate(variants):
        dts = dtypes if vi == 0 else ([d for d in dtypes if d in wide] or dtypes[:1])
        for dt in dts:
            idt = in_dtypes(dt) if in_dtypes else [dt] * len(shapes)
            doms = list(domains) + [domains[-1]] * (len(shapes) - len(domains))
            inputs = list(zip(shapes, idt, doms))
            add_case(f"{op}__{vname}__{SHORT[dt]}", op, fn, inputs, kwargs, grad)


# ---------------------------------------------------------------- views
def views():
    add_op("view", lambda x, shape: x.view(shape), [
        ("2d", [(3, 4)], {"shape": [4, 3]}),
        ("infer", [(2, 3, 4)], {"shape": [2, -1]}),
        ("0d", [()], {"shape": [1, 1]}),
        ("empty", [(0, 3)], {"shape": [3, 0]}),
    ], [F32, F64, F16, BF16, I64, U8, BOOL])
    add_op("reshape", lambda x, shape: x.reshape(shape), [
        ("2d", [(3, 4)], {"shape": [2, 6]}),
        ("infer", [(2, 3, 4)], {"shape": [-1, 4, 3]}),
        ("to0d", [(1, 1)], {"shape": []}),
    ], [F32, F64, I64])
    add_op("permute", lambda x, dims: x.permute(dims), [
        ("3d", [(2, 3, 4)], {"dims": [2, 0, 1]}),
        ("neg", [(2, 3, 4)], {"dims": [-1, 0, -2]}),
    ], [F32, F64, I64, BOOL])
    add_op("transpose", lambda x, d0, d1: x.transpose(d0, d1), [
        ("3d", [(2, 3, 4)], {"d0": 0, "d1": 2}),
        ("neg", [(2, 3, 4)], {"d0": -1, "d1": 1}),
    ], [F32, F64, U8])
    add_op("t", lambda x: x.t(), [("2d", [(3, 4)], {}), ("1d", [(5,)], {}), ("0d", [()], {})], [F32, F64])
    add_op("squeeze", lambda x: x.squeeze(), [("4d", [(3, 1, 4, 1)], {}), ("0d", [()], {})], [F32, F64])
    add_op("squeeze_dim", lambda x, dim: x.squeeze(dim), [
        ("mid", [(3, 1, 4, 1)], {"dim": 1}),
        ("neg", [(3, 1, 4, 1)], {"dim": -1}),
        ("noop", [(3, 1, 4, 1)], {"dim": 0}),
    ], [F32, F64])
    add_op("unsqueeze", lambda x, dim: x.unsqueeze(dim), [
        ("mid", [(3, 4)], {"dim": 1}),
        ("neg", [(3, 4)], {"dim": -1}),
        ("0d", [()], {"dim": 0}),
    ], [F32, F64, I64])
    add_op("flatten", lambda x, start, end: x.flatten(start, end), [
        ("tail", [(2, 3, 4)], {"start": 1, "end": -1}),
        ("head", [(2, 3, 4)], {"start": 0, "end": 1}),
        ("0d", [()], {"start": 0, "end": -1}),
    ], [F32, F64])
    add_op("unflatten", lambda x, dim, sizes: x.unflatten(dim, sizes), [
        ("2d", [(2, 12)], {"dim": 1, "sizes": [3, -1]}),
    ], [F32, F64])
    add_op("expand", lambda x, shape: x.expand(shape), [
        ("new_dims", [(3, 1)], {"shape": [2, 3, 4]}),
        ("keep", [(3, 1)], {"shape": [-1, 5]}),
        ("0d", [()], {"shape": [2, 3]}),
    ], [F32, F64, I64])
    add_op("broadcast_to", lambda x, shape: torch.broadcast_to(x, shape), [
        ("row", [(1, 4)], {"shape": [3, 4]}),
    ], [F32, F64])
    add_op("narrow", lambda x, dim, start, length: x.narrow(dim, start, length), [
        ("mid", [(4, 5)], {"dim": 1, "start": 1, "length": 3}),
        ("negstart", [(4, 5)], {"dim": 0, "start": -2, "length": 2}),
        ("empty", [(4, 5)], {"dim": 1, "start": 2, "length": 0}),
    ], [F32, F64, I64])

    def py_slice(x, dim, start, end, step):
        idx = [slice(None)] * x.dim()
        idx[dim] = slice(start, end, step)
        return x[tuple(idx)]

    add_op("slice", py_slice, [
        ("step", [(5, 6)], {"dim": 0, "start": 1, "end": None, "step": 2}),
        ("neg", [(5, 6)], {"dim": 1, "start": -4, "end": -1, "step": 1}),
        ("clamped", [(5, 6)], {"dim": -1, "start": None, "end": 100, "step": 3}),
        ("empty", [(5, 6)], {"dim": 0, "start": 4, "end": 2, "step": 1}),
    ], [F32, F64, BOOL])
    add_op("select", lambda x, dim, index: x.select(dim, index), [
        ("neg", [(3, 4)], {"dim": 1, "index": -1}),
        ("first", [(3, 4)], {"dim": 0, "index": 2}),
    ], [F32, F64, I64])
    add_op("chunk", lambda x, chunks, dim: torch.chunk(x, chunks, dim), [
        ("rows", [(5, 4)], {"chunks": 2, "dim": 0}),
        ("uneven", [(3, 6)], {"chunks": 4, "dim": -1}),
    ], [F32, F64])
    add_op("split", lambda x, size, dim: torch.split(x, size, dim), [
        ("rows", [(5, 4)], {"size": 2, "dim": 0}),
    ], [F32, F64])
    add_op("split_sizes", lambda x, sizes, dim: torch.split(x, sizes, dim), [
        ("cols", [(3, 5)], {"sizes": [1, 3, 1], "dim": 1}),
    ], [F32, F64])
    add_op("contiguous_copy", lambda x: x.clone(), [
        ("2d", [(3, 4)], {}), ("0d", [()], {}), ("empty", [(0, 3)], {}),
    ], ALL)
    for dt in ALL:
        add_op(f"to_dtype_{SHORT[dt]}", lambda x, dt=dt: x.to(dt), [("2d", [(3, 4)], {})], ALL, ("cast",))


# ---------------------------------------------------------------- binary arithmetic
BINARY_VARIANTS = [
    ("same", [(3, 4), (3, 4)], {}),
    ("bcast_row", [(3, 4), (4,)], {}),
    ("bcast_both", [(2, 1, 4), (3, 1)], {}),
    ("scalar_rhs", [(3, 4), ()], {}),
    ("0d", [(), ()], {}),
    ("empty", [(0, 4), (4,)], {}),
]


def binary():
    no_bool = [U8, I64] + FLOATS
    add_op("add", torch.add, BINARY_VARIANTS, ALL)
    add_op("sub", torch.sub, BINARY_VARIANTS, no_bool)
    add_op("mul", torch.mul, BINARY_VARIANTS, ALL)
    add_op("div", torch.div, BINARY_VARIANTS, ALL, ("any", "nonzero"))
    add_op("pow", torch.pow, BINARY_VARIANTS, no_bool, ("pow_base", "pow_exp"))
    add_op("maximum", torch.maximum, BINARY_VARIANTS, ALL, ("grid",))
    add_op("minimum", torch.minimum, BINARY_VARIANTS, ALL, ("grid",))
    # Mixed dtypes: PyTorch's promotion.
    for a, b in [(I64, F32), (U8, I64), (F16, BF16), (BOOL, U8), (F16, F32), (BOOL, F64)]:
        for op, fn in [("add", torch.add), ("mul", torch.mul), ("div", torch.div)]:
            dom = ("pos", "nonzero")
            add_case(f"{op}__promote_{SHORT[a]}_{SHORT[b]}__{SHORT[b]}", op, fn,
                     [((3, 4), a, dom[0]), ((4,), b, dom[1])], {}, True)
    # Scalar forms: the Rust method takes f64.
    sv = [("2d", [(3, 4)], {"value": 2.5}), ("int", [(3, 4)], {"value": 2.0}), ("0d", [()], {"value": -1.5}),
          ("empty", [(0, 3)], {"value": 2.5})]
    add_op("add_scalar", lambda x, value: x + value, sv, no_bool)
    add_op("sub_scalar", lambda x, value: x - value, sv, no_bool)
    add_op("rsub_scalar", lambda x, value: value - x, sv, no_bool)
    add_op("mul_scalar", lambda x, value: x * value, sv, no_bool)
    add_op("div_scalar", lambda x, value: x / value, sv, no_bool)
    add_op("rdiv_scalar", lambda x, value: value / x, sv, no_bool, ("nonzero",))
    pv = [("2d", [(3, 4)], {"value": 2.5}), ("int", [(3, 4)], {"value": 3.0}), ("neg", [(3, 4)], {"value": -1.5})]
    add_op("pow_scalar", lambda x, value: x ** value, pv, [F32, F64, F16, BF16], ("pos",))
    add_op("pow_scalar", lambda x, value: x ** value, [("intexp", [(3, 4)], {"value": 2.0})], [I64, U8], ("pow_base",))
    add_op("rpow_scalar", lambda x, value: value ** x, [("2d", [(3, 4)], {"value": 2.5}), ("int", [(3, 4)], {"value": 2.0})],
           [F32, F64, F16, BF16, I64], ("pow_exp",))


# ---------------------------------------------------------------- comparisons, logical, where
def compare():
    for op in ["lt", "le", "gt", "ge", "eq", "ne"]:
        fn = getattr(torch, op)
        add_op(op, fn, BINARY_VARIANTS[:5], ALL, ("grid",), grad=False)
        add_op(f"{op}_scalar", lambda x, value, fn=fn: fn(x, value),
               [("half", [(3, 4)], {"value": 0.5}), ("one", [(3, 4)], {"value": 1.0}), ("empty", [(0, 2)], {"value": 1.0})],
               ALL, ("grid",), grad=False)
    for op in ["logical_and", "logical_or", "logical_xor"]:
        add_op(op, getattr(torch, op), BINARY_VARIANTS[:5], ALL, ("grid",), grad=False)
    add_op("logical_not", torch.logical_not, [("2d", [(3, 4)], {}), ("0d", [()], {})], ALL, ("grid",), grad=False)
    where_variants = [
        ("same", [(3, 4), (3, 4), (3, 4)], {}),
        ("bcast", [(3, 1), (4,), (2, 1, 1)], {}),
        ("0d", [(), (), ()], {}),
    ]
    add_op("where", torch.where, where_variants, [F32, F64, F16, BF16, I64, U8, BOOL], ("mask", "any"),
           in_dtypes=lambda d: [BOOL, d, d])
    add_op("masked_fill", lambda x, m, value: x.masked_fill(m, value),
           [("same", [(3, 4), (3, 4)], {"value": -2.5}), ("bcast", [(3, 4), (4,)], {"value": 1.0}),
            ("0d", [(), ()], {"value": 3.0})],
           [F32, F64, F16, BF16], ("any", "mask"), in_dtypes=lambda d: [d, BOOL])
    add_op("masked_fill", lambda x, m, value: x.masked_fill(m, value),
           [("int", [(3, 4), (3, 4)], {"value": 7.0})], [I64, U8, BOOL], ("any", "mask"), in_dtypes=lambda d: [d, BOOL])


# ---------------------------------------------------------------- reductions
RED_VARIANTS = [
    ("all", [(2, 3, 4)], {"dims": [], "keepdim": False}),
    ("dim1", [(2, 3, 4)], {"dims": [1], "keepdim": False}),
    ("dims02_keep", [(2, 3, 4)], {"dims": [0, 2], "keepdim": True}),
    ("neg_keep", [(2, 3, 4)], {"dims": [-1], "keepdim": True}),
    ("0d", [()], {"dims": [], "keepdim": False}),
    ("empty", [(0, 3)], {"dims": [0], "keepdim": False}),
]


def tdims(dims):
    return None if dims == [] else dims


def reductions():
    add_op("sum", lambda x, dims, keepdim: torch.sum(x, tdims(dims), keepdim=keepdim) if dims else torch.sum(x),
           RED_VARIANTS, ALL)
    add_op("sum_all", torch.sum, [("3d", [(2, 3, 4)], {}), ("empty", [(0, 3)], {})], ALL)
    add_op("mean", lambda x, dims, keepdim: torch.mean(x, tdims(dims), keepdim=keepdim) if dims else torch.mean(x),
           RED_VARIANTS, FLOATS)
    add_op("mean_all", torch.mean, [("3d", [(2, 3, 4)], {})], FLOATS)
    add_op("prod", lambda x, dims, keepdim: _prod(x, dims, keepdim), RED_VARIANTS[:5], FLOATS + [I64], ("prod",))
    add_op("max_all", torch.max, [("3d", [(2, 3, 4)], {}), ("0d", [()], {})], FLOATS + [I64, U8], ("distinct",))
    add_op("min_all", torch.min, [("3d", [(2, 3, 4)], {}), ("0d", [()], {})], FLOATS + [I64, U8], ("distinct",))
    for op in ["amax", "amin"]:
        add_op(op, lambda x, dims, keepdim, op=op: getattr(torch, op)(x, dims, keepdim), RED_VARIANTS[:5],
               FLOATS + [I64, U8], ("distinct",))
    dim_variants = [("dim1", [(2, 3, 4)], {"dim": 1, "keepdim": False}),
                    ("neg_keep", [(2, 3, 4)], {"dim": -1, "keepdim": True})]
    add_op("max_dim", lambda x, dim, keepdim: torch.max(x, dim, keepdim), dim_variants, FLOATS + [I64], ("distinct",))
    add_op("min_dim", lambda x, dim, keepdim: torch.min(x, dim, keepdim), dim_variants, FLOATS + [I64], ("distinct",))
    arg_variants = [("dim1", [(2, 3, 4)], {"dim": 1, "keepdim": False}),
                    ("neg_keep", [(2, 3, 4)], {"dim": -1, "keepdim": True}),
                    ("flat", [(2, 3, 4)], {"dim": None, "keepdim": False})]
    add_op("argmax", lambda x, dim, keepdim: torch.argmax(x, dim, keepdim), arg_variants, FLOATS + [I64],
           ("distinct",), grad=False)
    add_op("argmin", lambda x, dim, keepdim: torch.argmin(x, dim, keepdim), arg_variants, FLOATS + [I64],
           ("distinct",), grad=False)
    var_variants = [
        ("dim1", [(2, 3, 4)], {"dims": [1], "correction": 1.0, "keepdim": False}),
        ("all_pop", [(2, 3, 4)], {"dims": [], "correction": 0.0, "keepdim": False}),
        ("dims_keep", [(2, 3, 4)], {"dims": [0, -1], "correction": 1.0, "keepdim": True}),
    ]
    for op in ["var", "std"]:
        add_op(op, lambda x, dims, correction, keepdim, op=op: getattr(torch, op)(
            x, tdims(dims), correction=correction, keepdim=keepdim), var_variants, FLOATS)
    add_op("logsumexp", lambda x, dims, keepdim: torch.logsumexp(x, dims, keepdim), RED_VARIANTS[1:4], FLOATS)
    norm_variants = [
        ("p2", [(2, 3, 4)], {"p": 2.0, "dims": [], "keepdim": False}),
        ("p1_dim", [(2, 3, 4)], {"p": 1.0, "dims": [1], "keepdim": False}),
        ("pinf_keep", [(2, 3, 4)], {"p": "inf", "dims": [-1], "keepdim": True}),
        ("p2_dims", [(2, 3, 4)], {"p": 2.0, "dims": [0, 2], "keepdim": False}),
    ]
    add_op("norm", lambda x, p, dims, keepdim: torch.linalg.vector_norm(
        x, float(p), tdims(dims), keepdim), norm_variants, FLOATS, ("distinct",))
    for op in ["all", "any"]:
        add_op(op, getattr(torch, op), [("2d", [(3, 4)], {}), ("empty", [(0, 3)], {})], [BOOL, F32, I64],
               ("mask",), grad=False)
        add_op(f"{op}_dims", lambda x, dims, keepdim, op=op: getattr(torch, op)(x, dims, keepdim),
               [("dim1", [(2, 3, 4)], {"dims": [1], "keepdim": False}),
                ("dims_keep", [(2, 3, 4)], {"dims": [0, -1], "keepdim": True})],
               [BOOL, F32], ("mask",), grad=False)
    scan = [("dim1", [(2, 3, 4)], {"dim": 1}), ("neg", [(2, 3, 4)], {"dim": -1}), ("0d", [()], {"dim": 0}),
            ("empty", [(0, 3)], {"dim": 1})]
    add_op("cumsum", lambda x, dim: torch.cumsum(x, dim), scan, FLOATS + [I64, BOOL])
    add_op("cumprod", lambda x, dim: torch.cumprod(x, dim), scan, FLOATS + [I64], ("prod",))
    sm = [("last", [(2, 3, 4)], {"dim": -1}), ("first", [(2, 3, 4)], {"dim": 0}), ("0d", [()], {"dim": 0}),
          ("empty", [(0, 3)], {"dim": -1})]
    add_op("softmax", lambda x, dim: torch.softmax(x, dim), sm, FLOATS)
    add_op("log_softmax", lambda x, dim: torch.log_softmax(x, dim), sm, FLOATS)


def _prod(x, dims, keepdim):
    if not dims:
        out = torch.prod(x)
        return out.reshape([1] * x.dim()) if keepdim else out
    for d in sorted([d % x.dim() for d in dims], reverse=True):
        x = torch.prod(x, d, keepdim=keepdim)
    return x


# ---------------------------------------------------------------- unary
UNARY_VARIANTS = [("2d", [(3, 4)], {}), ("0d", [()], {}), ("empty", [(0, 3)], {})]


def unary():
    int_keeps = [F32, F64, F16, BF16, I64]  # integer results stay integral
    int_float = [F32, F64, F16, BF16, I64]  # integers computed as f32
    specs = [
        ("neg", torch.neg, "any", int_keeps), ("abs", torch.abs, "nonzero", int_keeps),
        ("sign", torch.sign, "nonzero", int_keeps), ("exp", torch.exp, "any", int_float),
        ("log", torch.log, "pos", int_float), ("log2", torch.log2, "pos", int_float),
        ("log1p", torch.log1p, "pos", int_float), ("expm1", torch.expm1, "any", int_float),
        ("sqrt", torch.sqrt, "pos", int_float), ("rsqrt", torch.rsqrt, "pos", int_float),
        ("square", torch.square, "any", int_keeps), ("reciprocal", torch.reciprocal, "nonzero", int_float),
        ("sin", torch.sin, "any", int_float), ("cos", torch.cos, "any", int_float),
        ("tan", torch.tan, "small", int_float), ("tanh", torch.tanh, "any", int_float),
        ("sigmoid", torch.sigmoid, "any", int_float), ("relu", torch.relu, "nonzero", int_keeps),
        ("gelu", F.gelu, "any", FLOATS), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "any", FLOATS),
        ("silu", F.silu, "any", FLOATS), ("erf", torch.erf, "any", int_float),
        ("floor", torch.floor, "frac", int_keeps), ("ceil", torch.ceil, "frac", int_keeps),
        ("round", torch.round, "frac", int_keeps),
    ]
    for op, fn, dom, dts in specs:
        add_op(op, fn, UNARY_VARIANTS, dts, (dom,))
    add_op("leaky_relu", lambda x, slope: F.leaky_relu(x, slope), [
        ("2d", [(3, 4)], {"slope": 0.1}), ("0d", [()], {"slope": 0.01})], FLOATS, ("nonzero",))
    add_op("elu", lambda x, alpha: F.elu(x, alpha), [
        ("2d", [(3, 4)], {"alpha": 1.0}), ("alpha", [(3, 4)], {"alpha": 0.5})], FLOATS, ("nonzero",))
    add_op("softplus", lambda x, beta, threshold: F.softplus(x, beta, threshold), [
        ("2d", [(3, 4)], {"beta": 1.0, "threshold": 20.0}),
        ("thresh", [(3, 4)], {"beta": 2.0, "threshold": 1.0})], FLOATS, ("nonzero",))
    add_op("clamp", lambda x, min, max: torch.clamp(x, min, max), [
        ("both", [(3, 4)], {"min": -0.5, "max": 0.5}),
        ("min", [(3, 4)], {"min": -0.5, "max": None}),
        ("max", [(3, 4)], {"min": None, "max": 0.5}),
        ("0d", [()], {"min": -0.5, "max": 0.5}),
        # min > max: every element becomes max.
        ("crossed", [(3, 4)], {"min": 0.5, "max": -0.5})], FLOATS, ("clamp",))
    add_op("clamp", lambda x, min, max: torch.clamp(x, min, max), [
        ("int", [(3, 4)], {"min": -2.0, "max": 3.0}),
        ("int_crossed", [(3, 4)], {"min": 3.0, "max": -2.0})], [I64], ("any",))
    add_op("clamp_min", lambda x, value: torch.clamp_min(x, value), [("2d", [(3, 4)], {"value": -0.5})],
           FLOATS, ("clamp",))
    add_op("clamp_max", lambda x, value: torch.clamp_max(x, value), [("2d", [(3, 4)], {"value": 0.5})],
           FLOATS, ("clamp",))


# ---------------------------------------------------------------- matmul, in-place
def matmul():
    mm_dts = [F32, F64, F16, BF16, I64]
    add_op("matmul", torch.matmul, [
        ("2d", [(3, 4), (4, 5)], {}),
        ("1d1d", [(4,), (4,)], {}),
        ("2d1d", [(3, 4), (4,)], {}),
        ("1d2d", [(4,), (4, 5)], {}),
        ("batched", [(2, 3, 4), (4, 5)], {}),
        ("bcast_batch", [(2, 1, 3, 4), (3, 4, 2)], {}),
        ("empty_k", [(3, 0), (0, 2)], {}),
    ], mm_dts)
    add_op("mm", torch.mm, [("2d", [(3, 4), (4, 5)], {})], mm_dts)
    add_op("bmm", torch.bmm, [("3d", [(2, 3, 4), (2, 4, 5)], {})], mm_dts)
    add_op("outer", torch.outer, [("1d", [(3,), (4,)], {})], mm_dts)
    add_op("dot", torch.dot, [("1d", [(5,), (5,)], {})], mm_dts)
    inplace_bin = [("same", [(3, 4), (3, 4)], {}), ("bcast", [(3, 4), (4,)], {})]
    add_op("add_", lambda x, y: x.clone().add_(y), inplace_bin, [F32, F64, I64], grad=False)
    add_op("sub_", lambda x, y: x.clone().sub_(y), inplace_bin, [F32, F64, I64], grad=False)
    add_op("mul_", lambda x, y: x.clone().mul_(y), inplace_bin, [F32, F64, I64], grad=False)
    add_op("div_", lambda x, y: x.clone().div_(y), inplace_bin, [F32, F64], ("any", "nonzero"), grad=False)
    add_op("add_scalar_", lambda x, value: x.clone().add_(value), [("2d", [(3, 4)], {"value": 1.5})], [F32, F64],
           grad=False)
    add_op("mul_scalar_", lambda x, value: x.clone().mul_(value), [("2d", [(3, 4)], {"value": -2.5})], [F32, F64],
           grad=False)
    add_op("copy_", lambda x, y: x.clone().copy_(y), inplace_bin, [F32, F64, I64, BOOL], grad=False)
    add_op("zero_", lambda x: x.clone().zero_(), [("2d", [(3, 4)], {})], [F32, I64], grad=False)
    add_op("fill_", lambda x, value: x.clone().fill_(value), [("2d", [(3, 4)], {"value": 2.5})], [F32, F64],
           grad=False)
    add_op("clamp_", lambda x, min, max: x.clone().clamp_(min, max), [
        ("both", [(3, 4)], {"min": -0.5, "max": 0.5}), ("min", [(3, 4)], {"min": 0.0, "max": None})], [F32, F64],
        grad=False)


# ---------------------------------------------------------------- attention
def attention():
    sdpa = torch.nn.functional.scaled_dot_product_attention
    add_op("sdpa", lambda q, k, v, is_causal, scale: sdpa(q, k, v, is_causal=is_causal, scale=scale), [
        ("basic", [(2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)], {"is_causal": False, "scale": None}),
        # 150 queries and keys cross the kernel's 64-query and 128-key block edges.
        ("causal_blocks", [(1, 2, 150, 8)] * 3, {"is_causal": True, "scale": None}),
        ("long", [(1, 1, 150, 8), (1, 1, 140, 8), (1, 1, 140, 4)], {"is_causal": False, "scale": None}),
        ("causal_rect", [(1, 1, 6, 4), (1, 1, 9, 4), (1, 1, 9, 4)], {"is_causal": True, "scale": None}),
        ("scale", [(2, 4, 4), (2, 5, 4), (2, 5, 3)], {"is_causal": False, "scale": 0.3}),
        ("bcast_batch", [(2, 3, 5, 4), (1, 3, 6, 4), (3, 6, 4)], {"is_causal": False, "scale": None}),
        ("3d", [(4, 5, 8), (4, 5, 8), (4, 5, 8)], {"is_causal": False, "scale": None}),
    ], FLOATS)
    add_op("sdpa_bool_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), [
        ("bcast_heads", [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), (2, 1, 5, 6)], {}),
        ("2d", [(1, 3, 70, 4), (1, 3, 130, 4), (1, 3, 130, 4), (70, 130)], {}),
    ], [F32, F64], domains=("any", "any", "any", "mask"), in_dtypes=lambda dt: [dt, dt, dt, BOOL])
    add_op("sdpa_float_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), [
        ("2d", [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), (5, 6)], {}),
    ], [F32, F64])


# ---------------------------------------------------------------- index and shape ops
def index_shape():
    add_op("cat", lambda *xs, dim: torch.cat(xs, dim), [
        ("dim0", [(2, 3), (1, 3), (3, 3)], {"dim": 0}),
        ("neg", [(2, 3), (2, 1)], {"dim": -1}),
        ("with_empty", [(2, 3), (0, 3)], {"dim": 0}),
    ], ALL)
    add_op("stack", lambda *xs, dim: torch.stack(xs, dim), [
        ("dim0", [(2, 3), (2, 3)], {"dim": 0}),
        ("last", [(2, 3), (2, 3), (2, 3)], {"dim": -1}),
        ("0d", [(), ()], {"dim": 0}),
    ], ALL)
    add_op("hstack", lambda *xs: torch.hstack(xs), [("2d", [(2, 3), (2, 1)], {}), ("1d", [(2,), (3,)], {})], [F32, F64])
    add_op("vstack", lambda *xs: torch.vstack(xs), [("2d", [(2, 3), (1, 3)], {}), ("1d", [(3,), (3,)], {})], [F32, F64])
    idx = lambda d: [d, I64]
    add_op("index_select", lambda x, i, dim: torch.index_select(x, dim, i), [
        ("dim0", [(4, 3), (5,)], {"dim": 0}),
        ("neg", [(2, 4), (3,)], {"dim": -1}),
        ("empty_index", [(4, 3), (0,)], {"dim": 0}),
    ], ALL, ("any", "idx:2"), in_dtypes=idx)
    add_op("gather", lambda x, i, dim: torch.gather(x, dim, i), [
        ("dim1", [(3, 4), (3, 2)], {"dim": 1}),
        ("dim0", [(3, 4), (2, 4)], {"dim": 0}),
        ("empty_index", [(3, 4), (3, 0)], {"dim": 1}),
    ], ALL, ("any", "idx:3"), in_dtypes=idx)
    trip = lambda d: [d, I64, d]
    add_op("scatter", lambda x, i, s, dim: torch.scatter(x, dim, i, s), [
        ("dim1", [(3, 5), (3, 2), (3, 2)], {"dim": 1}),
    ], [F32, F64, I64], ("any", "perm:5", "any"), in_dtypes=trip)
    add_op("scatter_value", lambda x, i, dim, value: torch.scatter(x, dim, i, value), [
        ("dim1", [(3, 5), (3, 2)], {"dim": 1, "value": -1.5}),
    ], [F32, F64], ("any", "perm:5"), in_dtypes=idx)
    add_op("scatter_add", lambda x, i, s, dim: torch.scatter_add(x, dim, i, s), [
        ("dim1", [(3, 5), (3, 4), (3, 4)], {"dim": 1}),
    ], [F32, F64, I64], ("any", "idx:5", "any"), in_dtypes=trip)
    add_op("index_add", lambda x, i, s, dim: torch.index_add(x, dim, i, s), [
        ("dim0", [(4, 3), (5,), (5, 3)], {"dim": 0}),
        ("dim1", [(2, 4), (3,), (2, 3)], {"dim": 1}),
    ], [F32, F64, I64], ("any", "idx:4", "any"), in_dtypes=lambda d: [d, I64, d])
    add_op("masked_select", lambda x, m: torch.masked_select(x, m), [
        ("same", [(3, 4), (3, 4)], {}), ("bcast", [(3, 4), (4,)], {}), ("0d", [(), ()], {}),
    ], ALL, ("any", "mask"), in_dtypes=lambda d: [d, BOOL])
    add_op("nonzero", torch.nonzero, [("2d", [(3, 4)], {}), ("1d", [(6,)], {}), ("empty", [(0, 3)], {})],
           [F32, I64, BOOL], ("mask",), grad=False)
    add_op("topk", lambda x, k, dim, largest, sorted: torch.topk(x, k, dim, largest, sorted), [
        ("largest", [(3, 5)], {"k": 2, "dim": -1, "largest": True, "sorted": True}),
        ("smallest", [(4, 3)], {"k": 3, "dim": 0, "largest": False, "sorted": True}),
    ], [F32, F64, F16, BF16, I64], ("distinct",))
    add_op("sort", lambda x, dim, descending: torch.sort(x, dim=dim, descending=descending), [
        ("asc", [(3, 5)], {"dim": -1, "descending": False}),
        ("desc", [(4, 3)], {"dim": 0, "descending": True}),
        ("0d", [()], {"dim": 0, "descending": False}),
    ], [F32, F64, F16, BF16, I64], ("distinct",))
    add_op("argsort", lambda x, dim, descending: torch.argsort(x, dim=dim, descending=descending), [
        ("asc", [(3, 5)], {"dim": -1, "descending": False}),
        ("desc", [(4, 3)], {"dim": 0, "descending": True}),
    ], [F32, F64, I64], ("distinct",), grad=False)
    add_op("flip", lambda x, dims: torch.flip(x, dims), [
        ("one", [(3, 4)], {"dims": [0]}), ("both", [(2, 3, 4)], {"dims": [0, -1]}),
        ("empty", [(0, 3)], {"dims": [1]}),
    ], ALL)
    add_op("roll", lambda x, shifts, dims: torch.roll(x, shifts, dims), [
        ("one", [(3, 4)], {"shifts": [1], "dims": [1]}),
        ("two", [(3, 4)], {"shifts": [-1, 5], "dims": [0, 1]}),
    ], ALL)
    add_op("repeat", lambda x, repeats: x.repeat(repeats), [
        ("2d", [(2, 3)], {"repeats": [2, 1]}), ("newdim", [(2, 3)], {"repeats": [2, 1, 3]}),
        ("zero", [(2, 3)], {"repeats": [0, 2]}), ("0d", [()], {"repeats": [3]}),
    ], ALL)
    add_op("repeat_interleave", lambda x, repeats, dim: torch.repeat_interleave(x, repeats, dim), [
        ("dim0", [(2, 3)], {"repeats": 2, "dim": 0}), ("flat", [(2, 3)], {"repeats": 3, "dim": None}),
    ], [F32, F64, I64])
    add_op("pad_constant", lambda x, pads, value: F.pad(x, pads, "constant", value), [
        ("last", [(2, 3)], {"pads": [1, 2], "value": 0.0}),
        ("two", [(2, 3)], {"pads": [1, 0, 2, 1], "value": -1.5}),
    ], [F32, F64])
    add_op("pad_reflect", lambda x, pads: F.pad(x, pads, "reflect"), [
        ("1d", [(2, 5)], {"pads": [2, 1]}), ("2d", [(1, 3, 4)], {"pads": [1, 2, 2, 1]}),
    ], [F32, F64])
    add_op("pad_replicate", lambda x, pads: F.pad(x, pads, "replicate"), [
        ("1d", [(2, 5)], {"pads": [2, 1]}), ("2d", [(1, 3, 4)], {"pads": [1, 2, 2, 1]}),
    ], [F32, F64])
    add_op("tril", lambda x, diagonal: torch.tril(x, diagonal), [
        ("0", [(4, 5)], {"diagonal": 0}), ("neg", [(4, 5)], {"diagonal": -1}), ("batch", [(2, 3, 3)], {"diagonal": 1}),
    ], ALL)
    add_op("triu", lambda x, diagonal: torch.triu(x, diagonal), [
        ("0", [(4, 5)], {"diagonal": 0}), ("neg", [(4, 5)], {"diagonal": -1}), ("batch", [(2, 3, 3)], {"diagonal": 1}),
    ], ALL)
    add_op("one_hot", lambda x, num_classes: F.one_hot(x, num_classes), [
        ("given", [(2, 3)], {"num_classes": 5}), ("infer", [(4,)], {"num_classes": -1}),
    ], [I64], ("idx:4",), grad=False)


# ---------------------------------------------------------------- einsum and nn.functional ops
def nn_ops():
    mm_dts = [F32, F64, F16, BF16, I64]
    add_op("einsum", lambda *xs, equation: torch.einsum(equation, *xs), [
        ("mm", [(3, 4), (4, 5)], {"equation": "ij,jk->ik"}),
        ("implicit", [(3, 4), (4, 5)], {"equation": "ij,jk"}),
        ("bmm", [(2, 3, 4), (2, 4, 5)], {"equation": "bij,bjk->bik"}),
        ("attn", [(2, 3, 4), (2, 5, 4)], {"equation": "bqd,bkd->bqk"}),
        ("batch_contract2", [(2, 3, 4, 5), (2, 5, 4)], {"equation": "bijk,bkj->bi"}),
        ("diag", [(4, 4)], {"equation": "ii->i"}),
        ("trace", [(4, 4)], {"equation": "ii"}),
        ("diag_apart", [(3, 2, 3)], {"equation": "iji->ji"}),
        ("diag_two_ops", [(3, 3), (3,)], {"equation": "ii,i->i"}),
        ("transpose", [(2, 3, 4)], {"equation": "ijk->kji"}),
        ("sum_all", [(2, 3)], {"equation": "ij->"}),
        ("outer", [(3,), (4,)], {"equation": "i,j->ij"}),
        ("dot", [(5,), (5,)], {"equation": "i,i->"}),
        ("sum_one_side", [(2, 3), (3, 4)], {"equation": "ij,jk->j"}),
        ("ellipsis_bcast", [(2, 1, 3, 4), (5, 4, 2)], {"equation": "...ij,...jk->...ik"}),
        ("ellipsis_move", [(2, 3, 4)], {"equation": "i...->...i"}),
        ("ellipsis_sum", [(2, 3, 4)], {"equation": "...j->j"}),
        ("ellipsis_implicit", [(2, 3, 4), (4,)], {"equation": "...j,j"}),
        ("three", [(2, 3), (3, 4), (4, 5)], {"equation": "ij,jk,kl->il"}),
        ("three_shared", [(2, 3), (2, 3), (2, 3)], {"equation": "ij,ij,ij->i"}),
        ("bcast_label", [(2, 1), (1, 3)], {"equation": "ij,ij->ij"}),
        ("capitals", [(2, 3), (3, 4)], {"equation": "Ab,bC"}),
        ("spaces", [(3, 4), (4, 5)], {"equation": " ij , jk -> ik "}),
        ("0d", [(), ()], {"equation": ",->"}),
        ("0d_vec", [(), (3,)], {"equation": ",i->i"}),
        ("empty_k", [(3, 0), (0, 2)], {"equation": "ij,jk->ik"}),
        ("empty_out", [(0, 3), (3, 2)], {"equation": "ij,jk->ik"}),
    ], mm_dts)
    add_op("diagonal", lambda x, offset, dim1, dim2: torch.diagonal(x, offset, dim1, dim2), [
        ("main", [(3, 4)], {"offset": 0, "dim1": 0, "dim2": 1}),
        ("above", [(3, 4)], {"offset": 1, "dim1": 0, "dim2": 1}),
        ("below", [(4, 3)], {"offset": -2, "dim1": 0, "dim2": 1}),
        ("3d", [(2, 3, 4)], {"offset": 0, "dim1": -1, "dim2": 0}),
        ("past", [(3, 4)], {"offset": 5, "dim1": 0, "dim2": 1}),
    ], [F32, F64, I64, BOOL])

    def mp1(x, kernel_size, stride, padding, dilation, ceil_mode):
        return F.max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode)

    pool = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}
    add_op("max_pool1d", mp1, [
        ("basic", [(2, 3, 8)], {**pool, "kernel_size": 3}),
        ("stride_pad", [(2, 3, 9)], {**pool, "kernel_size": 3, "stride": 2, "padding": 1}),
        ("dilation", [(1, 2, 10)], {**pool, "kernel_size": 2, "stride": 1, "dilation": 2}),
        ("ceil", [(2, 2, 7)], {**pool, "kernel_size": 2, "ceil_mode": True}),
        ("unbatched", [(3, 7)], {**pool, "kernel_size": 2}),
        ("empty_batch", [(0, 2, 5)], {**pool, "kernel_size": 2}),
    ], FLOATS, ("distinct",))

    def ap1(x, kernel_size, stride, padding, count_include_pad):
        return F.avg_pool1d(x, kernel_size, stride, padding, count_include_pad=count_include_pad)

    add_op("avg_pool1d", ap1, [
        ("basic", [(2, 3, 8)], {"kernel_size": 3, "stride": None, "padding": 0, "count_include_pad": True}),
        ("pad_incl", [(2, 2, 9)], {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": True}),
        ("pad_excl", [(2, 2, 9)], {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
        ("unbatched", [(3, 6)], {"kernel_size": 2, "stride": None, "padding": 0, "count_include_pad": True}),
    ], [F32, F64])
    add_op("adaptive_max_pool2d", lambda x, output_size: F.adaptive_max_pool2d(x, output_size), [
        ("divisible", [(2, 3, 6, 4)], {"output_size": [3, 2]}),
        ("uneven", [(1, 2, 7, 5)], {"output_size": [3, 4]}),
        ("global", [(2, 2, 5, 3)], {"output_size": [1, 1]}),
        ("larger", [(1, 1, 3, 2)], {"output_size": [5, 4]}),
        ("unbatched", [(2, 5, 5)], {"output_size": [2, 3]}),
    ], FLOATS, ("distinct",))
    add_op("pixel_shuffle", lambda x, upscale_factor: F.pixel_shuffle(x, upscale_factor), [
        ("basic", [(2, 8, 3, 4)], {"upscale_factor": 2}),
        ("r3", [(1, 9, 2, 2)], {"upscale_factor": 3}),
        ("unbatched", [(4, 2, 3)], {"upscale_factor": 2}),
        ("5d", [(2, 2, 4, 1, 2)], {"upscale_factor": 2}),
        ("r1", [(1, 3, 2, 2)], {"upscale_factor": 1}),
    ], ALL)
    # PyTorch 2.15's backward of an empty pixel_shuffle raises (its pixel_unshuffle returns
    # an empty gradient unchanged, of the wrong shape), so the empty case checks the forward.
    add_op("pixel_shuffle", lambda x, upscale_factor: F.pixel_shuffle(x, upscale_factor), [
        ("empty", [(0, 4, 2, 2)], {"upscale_factor": 2}),
    ], [F32, F64], grad=False)
    add_op("pixel_unshuffle", lambda x, downscale_factor: F.pixel_unshuffle(x, downscale_factor), [
        ("basic", [(2, 2, 6, 4)], {"downscale_factor": 2}),
        ("r3", [(1, 1, 6, 3)], {"downscale_factor": 3}),
        ("unbatched", [(1, 4, 2)], {"downscale_factor": 2}),
        ("5d", [(2, 2, 1, 4, 2)], {"downscale_factor": 2}),
    ], ALL)
    # No empty pixel_unshuffle case: PyTorch 2.15 returns an empty input unchanged (shape
    # (0, 1, 2, 2) stays (0, 1, 2, 2) for factor 2); TinyTorch gives (0, 4, 1, 1).

    def interp(x, size, scale_factor, mode, align_corners, recompute_scale_factor):
        # A one-element list stands for PyTorch's single number (every spatial dim).
        size = size[0] if size is not None and len(size) == 1 else size
        scale_factor = scale_factor[0] if scale_factor is not None and len(scale_factor) == 1 else scale_factor
        return F.interpolate(x, size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners,
                             recompute_scale_factor=recompute_scale_factor)

    def iv(name, shape, mode, size=None, sf=None, ac=None, rsf=None):
        return (name, [shape], {"size": size, "scale_factor": sf, "mode": mode, "align_corners": ac,
                                "recompute_scale_factor": rsf})

    add_op("interpolate", interp, [
        iv("bilinear_size", (2, 3, 4, 5), "bilinear", size=[7, 3]),
        iv("nearest_size", (2, 3, 4, 5), "nearest", size=[7, 3]),
        iv("nearest_scale2", (1, 2, 3, 4), "nearest", sf=[2.0]),
        iv("nearest_scale_frac", (1, 2, 5, 4), "nearest", sf=[1.7, 0.6]),
        iv("nearest_same_size", (1, 2, 3, 4), "nearest", sf=[1.2, 1.3]),
        iv("nearest_recompute", (1, 2, 5, 4), "nearest", sf=[1.7, 0.6], rsf=True),
        iv("nearest_1d", (2, 3, 5), "nearest", size=[8]),
        iv("nearest_3d", (1, 1, 2, 3, 2), "nearest", size=[3, 2, 4]),
        iv("nearest_exact", (1, 2, 5, 4), "nearest-exact", size=[3, 7]),
        iv("bilinear_ac", (2, 3, 4, 5), "bilinear", size=[7, 3], ac=True),
        iv("bilinear_scale", (1, 2, 5, 4), "bilinear", sf=[1.7, 2.5]),
        iv("bilinear_scale_ac", (1, 2, 5, 4), "bilinear", sf=[1.7], ac=True),
        iv("bilinear_same_size", (1, 2, 3, 4), "bilinear", sf=[1.2, 1.3]),
        iv("bilinear_recompute", (1, 2, 5, 4), "bilinear", sf=[1.7, 2.5], rsf=True),
        iv("bilinear_down", (1, 2, 7, 6), "bilinear", size=[3, 4]),
        iv("bilinear_one_ac", (1, 1, 4, 5), "bilinear", size=[1, 1], ac=True),
        iv("linear_1d", (2, 3, 5), "linear", size=[9]),
        iv("linear_1d_ac", (2, 3, 5), "linear", sf=[1.5], ac=True),
        iv("empty_batch", (0, 2, 3, 3), "bilinear", sf=[2.0]),
    ], FLOATS)


ST_DTYPE = {BOOL: "BOOL", U8: "U8", I64: "I64", F16: "F16", BF16: "BF16", F32: "F32", F64: "F64"}


def write_safetensors(path, tensors, metadata):
    """The safetensors format, written by hand with sorted keys so that the file is
    byte-for-byte reproducible (safetensors' own writer orders the header by hash)."""
    header = {"__metadata__": dict(sorted(metadata.items()))}
    chunks, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        f.write(b"".join(chunks))


def main():
    views()
    binary()
    compare()
    reductions()
    unary()
    matmul()
    index_shape()
    attention()
    nn_ops()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    write_safetensors(OUT, TENSORS, META)
    print(f"{len(META)} cases, {len(TENSORS)} tensors, {os.path.getsize(OUT)} bytes -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
