"""Randomized differential cases for TinyTorch's op table, checked against PyTorch.

Run by hand (CI never runs it; it only reads the committed file):

    python scripts/gen_random_cases.py          # writes the fixture file
    python scripts/gen_random_cases.py --check  # replays it against torch

Generated with torch 2.15.0 (the +cu132 build, run on the CPU with one thread) in about 5 s.
Output: `tinytorch/tests/fixtures/random_ops.safetensors` (about 2 MB), byte-for-byte
reproducible: every case draws from its own `random.Random(seed)` and
`torch.Generator().manual_seed(seed)` with seed = crc32("<op>__r<NNN>"), and the file is
written by `gen_fixtures.write_safetensors` (sorted keys).

In the spirit of PyTorch's OpInfo sample inputs, every op of the op table
(`tinytorch/tests/op_table/ops.rs`, `table()`; the script refuses to run if one has no
sampler) gets 12-40 seeded random cases (25 typically, more for the binary, reduction and
index families):
  - shapes of rank 0-4 with sizes in 0..5 (about 1 dim in 10 empty, size 1 often), compatible
    with the op (broadcastable operands, matching inner dims, in-range indices, ...); every
    stored tensor has at most 96 elements;
  - every dtype of {bool, u8, i64, f16, bf16, f32, f64} at least once per op, the op's own
    dtypes most of the time; ~30% of the binary, comparison, logical, where and maximum cases
    have operands of different dtypes AND ranks (often one of them 0-d: type promotion);
  - Python int and float scalars (integral floats such as 2.0 included), never a u8 scalar
    (or u8 with a negative i64 operand) whose result would depend on wrapping around 0..255;
  - values in the op's domain (gen_fixtures.make_input's), and in ~10% of the float cases of
    the ops with singular points (at least 2 per op) values at them: 0**0 and 0 bases, zero
    variance, norms at 0 with fractional p, sqrt/rsqrt/log at 0, -inf entries and whole -inf
    rows (and a 0-d -inf) for softmax/log_softmax/logsumexp, ties for max/min/amax/amin,
    halves for round, the kinks of abs/relu/clamp; gradients there are compared too;
  - inputs that are views of a stored base: transpose, permute, step slice, narrow, select
    (empty views at non-zero storage offsets included), expand, or a chain of two;
  - ~15% of the cases mutated so that PyTorch should reject them (dim out of range, shapes
    that do not broadcast, inner-dim mismatch, index out of range, float index, non-bool
    mask, chunks=0, narrow past the end, wrong dtype, expanded in-place targets, ...).
    Whether a case is an error case is decided by running PyTorch, never assumed: some
    mutations are accepted (see the summary) and then they are ordinary cases.
Answers are kept unambiguous: sort/argsort/topk/max inputs are distinct (bools: lines of at
most two distinct values), scatter/scatter_value indices never hit one place twice, and topk
with sorted=False only takes k <= 1.

File format
-----------
Case name `<op>__r<NNN>__<dtype>`: `<op>` the op-table name, NNN the per-op index, `<dtype>`
(bool u8 i64 f16 bf16 f32 f64) the dtype of the main input (input 0; for `where`, input 1).

Tensors:
    <case>.in0, .in1, ...       the contiguous BASE of each tensor input; the op runs on
                                recipe_i(base_i), see "views" below
    <case>.out, .out1, ...      every forward output (tuple outputs, chunks, splits in order),
                                contiguous detached copies (ok cases only)
    <case>.gout, .gout1, ...    a random upstream gradient ("any" domain, the output's
                                dtype/shape) for each output that requires grad
    <case>.grad0, .grad1, ...   PyTorch's gradient with respect to BASE input i (the leaf: for
                                an expanded input it is the reduced gradient; zeros where the
                                graph does not reach it), for each float base input

In-place ops (names ending in `_`) run without gradients on `recipe(base.clone())`; their
output is the tensor the op returns (the view) after the op, and `in0` is the base before it.

`__metadata__[<case>]` is compact JSON with sorted keys:
    {"op": <op-table name>,
     "kwargs": {...exactly the keys ops.rs reads...},
     "views": [<recipe of input 0>, <recipe of input 1>, ...],
     "expect": "ok" | "error",
     "error": "<first line of torch's exception, <= 160 chars>"    (error cases only),
     "no_grad_reason": "..."     (ok cases whose backward raised: stored without gradients)}
A recipe is a list of steps applied in order, each one of
    ["transpose", d0, d1]  ["permute", [dims]]  ["slice", dim, start, end, step]
    ["narrow", dim, start, length]  ["select", dim, index]  ["expand", [sizes]]
(all dims non-negative; slice bounds already clamped, end exclusive); [] means no view.

Scalar kwargs (`value` of the *_scalar ops, masked_fill, fill_, scatter_value, clamp_min and
clamp_max, `min`/`max` of clamp/clamp_) are passed to PyTorch exactly as drawn, a Python int
or a Python float, and the JSON keeps the distinction: `2` is an int scalar, `2.0` a float
one (a number without '.', 'e' or 'E' is an integer). The other float kwargs (slope, alpha,
beta, threshold, correction, p, scale, pad_constant's value) are always floats; `p` may be
"inf". For the reductions with a `dims` list, [] means all dims (kept as size 1 with
keepdim). Error messages have '"' and '\\' replaced by "'" and '/' (no JSON escapes needed).

`--check` reloads the file, rebuilds every input from its base and recipe, reruns the op and
asserts bit-identical outputs and gradients, and that every error case still raises.
"""

import argparse
import json
import math
import os
import random
import re
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import (  # noqa: E402  (the helpers of the fixed fixture cases)
    ALL, BF16, BOOL, F16, F32, F64, FLOATS, I64, SHORT, ST_DTYPE, U8, _prod, as_list,
    make_input, seed_of, write_safetensors,
)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "random_ops.safetensors")
OPS_RS = os.path.join(ROOT, "tinytorch", "tests", "op_table", "ops.rs")

MAX_NUMEL = 96  # every stored tensor (bases, outputs, gradients) stays this small
TARGET_CAP = 40  # inputs as the op sees them; views of them may need a larger base
P_BAD = 0.17  # cases drawn for mutation (~15% end up mutated: not every op has a mutation)
P_EDGE = 0.12  # float cases of ops with singular points that aim at them
EDGE_MIN = 2  # ... and at least this many per such op
P_MIXED = 0.3  # binary cases with operands of different dtypes and ranks
INTS = [BOOL, U8, I64]


class Retry(Exception):
    """A sampler drew something it cannot use (too large, no valid variant): draw again."""


# ================================================================ random shapes, dims, scalars
SIZES, SIZE_W = [0, 1, 2, 3, 4, 5], [1, 3, 2, 2, 1, 1]  # ~1 dim in 10 empty, size 1 often
RANK_W = [1, 2.5, 3, 2.5, 1]


def numel(shape):
    return math.prod(shape)


def dense(t):
    """A detached copy with row-major strides (contiguous() keeps odd strides of size-1 dims)."""
    return torch.empty(t.shape, dtype=t.dtype).copy_(t.detach())


def rshape(r, lo=0, hi=4, empty=True, cap=TARGET_CAP, rank=None):
    """A random shape of rank lo..hi (or `rank`) with at most `cap` elements."""
    sizes, w = (SIZES, SIZE_W) if empty else (SIZES[1:], SIZE_W[1:])
    for _ in range(200):
        n = rank if rank is not None else r.choices(range(lo, hi + 1), RANK_W[lo:hi + 1])[0]
        s = tuple(r.choices(sizes, w)[0] for _ in range(n))
        if numel(s) <= cap:
            return s
    raise Retry


def bcast_shapes(r, n, lo=0, hi=4):
    """`n` shapes that broadcast together: suffixes of one shape, some dims set to 1."""
    out = rshape(r, lo, hi)
    shapes = []
    for _ in range(n):
        k = len(out) if r.random() < 0.6 else r.randint(0, len(out))
        shapes.append(tuple(1 if r.random() < 0.25 else d for d in out[len(out) - k:]))
    return shapes


def break_bcast(r, a, b):
    """Make two shapes non-broadcastable: some aligned dim gets two different sizes != 1."""
    a, b = list(a) or [r.choice([2, 3])], list(b) or [r.choice([2, 3])]
    j = r.randint(1, min(len(a), len(b)))
    a[-j], b[-j] = r.sample([0, 2, 3, 4], 2)
    return tuple(a), tuple(b)


def mixed_ranks(r, a, b):
    """Make the ranks of a broadcastable pair differ, often making one of them 0-d."""
    if r.random() < 0.6:
        return ((), b) if r.random() < 0.5 else (a, ())
    if len(a) == len(b):
        if a and r.random() < 0.5:
            a = a[1:]
        else:
            b = (r.choice([1, 2]),) + tuple(b)
    return a, b


def rdim(r, rank):
    """A valid dim of a rank-`rank` tensor (0-d tensors take 0 and -1), negative 30%."""
    n = max(rank, 1)
    d = r.randrange(n)
    return d - n if r.random() < 0.3 else d


def bad_dim(r, rank):
    n = max(rank, 1)
    return r.choice([n, n + 1, -n - 1])


def draw_dims(r, rank, bad=False):
    """A `dims` list for the reductions: [] (all dims) or distinct dims, some negative."""
    n = max(rank, 1)
    if bad:
        if rank >= 1 and r.random() < 0.5:
            d = r.randrange(n)
            return [d, d - n]  # the same dim twice
        return [bad_dim(r, rank)]
    if r.random() < 0.25:
        return []
    dims = r.sample(range(n), r.randint(1, n))
    return [d - n if r.random() < 0.3 else d for d in dims]


def scalar(r, lo=-3, hi=3):
    """A Python scalar as the Rust kwarg will see it: an int (40%), an integral float such as
    2.0 (20%; `int_tensor * 2.0` is a float tensor) or a float with two decimals."""
    u = r.random()
    if u < 0.4:
        return r.randint(lo, hi)
    if u < 0.6:
        return float(r.randint(lo, hi))
    return round(r.uniform(lo, hi), 2)


def fill_value(r, dt):
    """A scalar to write into a `dt` tensor: non-negative for u8/bool (no wrapping casts)."""
    return scalar(r, 0, 9) if dt in (U8, BOOL) else scalar(r)


def factor_shape(r, n):
    """A random shape with `n` elements (view/reshape/unflatten targets)."""
    if n == 0:
        s = [r.randint(1, 4) for _ in range(r.randint(1, 3))]
        s[r.randrange(len(s))] = 0
        return s
    rank = r.randint(0 if n == 1 else 1, 4)
    if rank == 0:
        return []
    s = [1] * rank
    m, p = n, 2
    while m > 1:  # hand each prime factor to a random dim
        while m % p == 0:
            s[r.randrange(rank)] *= p
            m //= p
        p += 1
    return s


# ================================================================ values
# Domains on top of gen_fixtures.make_input's. The "edge" ones hit singular points on purpose.
EDGE_CHOICES = {
    "pow_edge_base": [0.0, 0.0, 0.0, 0.5, 1.0, 2.0],
    "pow_edge_exp": [0.0, 0.0, 1.0, 2.0, -1.0, 0.5, -0.5],
    "half": [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.0, 0.0, 1.0],  # round half to even
}
# (base domain, special value hit 35% of the time)
EDGE_SPECIAL = {"zero_pos": ("pos", 0.0), "zero_any": ("nonzero", 0.0), "m1_pos": ("pos", -1.0),
                "ninf": ("any", -math.inf), "cast0": ("cast", 0.0)}
INT_FALLBACK = {"zero_pos": "pow_base", "m1_pos": "pow_base", "cast0": "cast", "small_int": "pow_base",
                "zero_any": "any", "ninf": "any", "half": "any", "pow_edge_base": "pow_base",
                "pow_edge_exp": "pow_exp"}


def values(shape, dtype, domain, g):
    """Deterministic values of `shape` in `domain`, exactly representable in `dtype`."""
    shape = tuple(shape)
    fl = dtype.is_floating_point
    if domain == "prod" and not fl:  # small factors: products of up to 96 of them stay exact
        pool = [0, 1, 1, 1, 2] if dtype == U8 else [-1, 0, 1, 1, 1, 2]
        return torch.tensor(pool)[torch.randint(0, len(pool), shape, generator=g)].to(dtype)
    if domain == "u8_hi":  # u8 values that an int scalar in 0..5 can be subtracted from
        return torch.randint(5, 10, shape, generator=g).to(dtype)
    if domain in INT_FALLBACK and not fl:
        return make_input(shape, dtype, INT_FALLBACK[domain], g)
    if domain in EDGE_CHOICES:
        pool = torch.tensor(EDGE_CHOICES[domain], dtype=F64)
        return pool[torch.randint(0, len(pool), shape, generator=g)].to(dtype)
    if domain in EDGE_SPECIAL:
        base, special = EDGE_SPECIAL[domain]
        v = make_input(shape, F64, base, g)
        hit = torch.rand(shape, generator=g, dtype=F64) < 0.35
        return torch.where(hit, torch.full_like(v, special), v).to(dtype)
    if domain == "small_int":  # (floats: any values)
        domain = "any"
    return make_input(shape, dtype, domain, g)


def perm_index(shape, dim, n, g):
    """An index for scatter: along `dim`, every line is a prefix of a permutation of
    range(n), so no two elements go to the same place and the result is unambiguous."""
    shape = tuple(shape)
    if not shape:
        return torch.randperm(n, generator=g)[:1].reshape(())
    moved = shape[:dim] + shape[dim + 1:] + (shape[dim],)
    rows = numel(moved[:-1])
    t = torch.stack([torch.randperm(n, generator=g)[: moved[-1]] for _ in range(rows)]) if rows else \
        torch.zeros(0, moved[-1], dtype=I64)
    return t.reshape(moved).movedim(-1, dim).contiguous()


# ================================================================ view recipes
def apply_recipe(x, recipe):
    for step in recipe:
        kind, a = step[0], step[1:]
        if kind == "transpose":
            x = x.transpose(a[0], a[1])
        elif kind == "permute":
            x = x.permute(a[0])
        elif kind == "slice":
            dim, start, end, st = a
            x = x[(slice(None),) * dim + (slice(start, end, st),)]
        elif kind == "narrow":
            x = x.narrow(a[0], a[1], a[2])
        elif kind == "select":
            x = x.select(a[0], a[1])
        elif kind == "expand":
            x = x.expand(a[0])
        else:
            raise ValueError(step)
    return x


# Each inverse takes the shape a step must produce and returns (step, the shape before it).
def inv_transpose(r, s):
    d0, d1 = r.sample(range(len(s)), 2)
    b = list(s)
    b[d0], b[d1] = b[d1], b[d0]
    return ["transpose", d0, d1], b


def inv_permute(r, s):
    p = list(range(len(s)))
    while p == sorted(p):
        r.shuffle(p)
    b = [0] * len(s)
    for i, pi in enumerate(p):  # view.shape[i] = base.shape[p[i]]
        b[pi] = s[i]
    return ["permute", p], b


def inv_slice(r, s):
    d, step, start = r.randrange(len(s)), r.choice([2, 3]), r.randint(0, 2)
    n = s[d]
    if n == 0:
        length, end = start + r.randint(0, 2), start
    else:
        lo = start + (n - 1) * step + 1  # the smallest end that still gives n elements
        length = lo + r.randint(0, step - 1)
        end = r.randint(lo, min(length, start + n * step))
    b = list(s)
    b[d] = length
    return ["slice", d, start, end, step], b


def inv_narrow(r, s):
    d, start = r.randrange(len(s)), r.randint(0, 2)
    b = list(s)
    b[d] = s[d] + start + r.randint(0, 2)
    return ["narrow", d, start, s[d]], b


def inv_select(r, s):
    d = r.randint(0, len(s))
    if numel(s) == 0:  # an empty view at a non-zero storage offset
        size = r.choice([2, 3])
        index = r.randint(1, size - 1)
    else:
        size = r.choice([1, 2, 3])
        index = r.randrange(size)
    return ["select", d, index], list(s[:d]) + [size] + list(s[d:])


def inv_expand(r, s, force=False):
    k = 0 if force else r.randint(0, min(2, len(s)))  # leading dims the base lacks
    b = [1 if r.random() < 0.5 else x for x in s[k:]]
    big = [i for i, x in enumerate(s[k:]) if x >= 2]
    if big and (force or b == list(s)):  # make sure something is really broadcast
        b[r.choice(big)] = 1
    return ["expand", list(s)], b


INVERSE = {"transpose": inv_transpose, "permute": inv_permute, "slice": inv_slice,
           "narrow": inv_narrow, "select": inv_select, "expand": inv_expand}


def choose_recipe(r, target, expand):
    """(recipe, base shape) for an input the op sees with shape `target`. `expand` is "ok",
    "no" (values whose structure expand would break; in-place targets) or "force"."""
    if expand == "force":
        step, base = inv_expand(r, list(target), force=True)
        return [step], base
    u = r.random()
    nsteps = 0 if u < 0.4 else 1 if u < 0.82 else 2
    for _ in range(8):
        shape, steps = list(target), []
        for _ in range(nsteps):
            rank = len(shape)
            kinds = ["select"] + (["slice", "narrow"] if rank >= 1 else []) + \
                (["transpose", "permute"] if rank >= 2 else [])
            if expand == "ok" and rank >= 1 and not any(st[0] == "expand" for st in steps):
                kinds.append("expand")
            step, shape = INVERSE[r.choice(kinds)](r, shape)
            steps.insert(0, step)
        if numel(shape) <= MAX_NUMEL and len(shape) <= 5:
            return steps, shape
    return [], list(target)


# ================================================================ case specs
@dataclass
class Inp:
    """One tensor input as the op sees it (after the view recipe)."""
    shape: tuple
    dtype: torch.dtype
    domain: str = "any"
    values: Optional[torch.Tensor] = None  # explicit values (structured inputs)
    expand: str = "ok"  # see choose_recipe


@dataclass
class Spec:
    inputs: list
    kwargs: dict = field(default_factory=dict)
    mixed: bool = False  # operands of different dtypes (for the summary)


@dataclass
class Ctx:
    op: str
    r: random.Random
    g: torch.Generator
    dt: torch.dtype  # the main input's dtype
    mutate: bool  # mutate into something PyTorch should reject
    edge: bool  # aim at the op's singular points
    bad_read: bool = False  # the sampler asked for `bad` (it has mutations to offer)

    @property
    def bad(self):
        self.bad_read = True
        return self.mutate

    def other_dtype(self):
        return self.r.choice([d for d in ALL if d != self.dt])


# ================================================================ samplers: views and shapes
def s_plain(dom="any"):
    """Ops without arguments that accept any input (nothing to mutate)."""
    def sample(c):
        return Spec([Inp(rshape(c.r), c.dt, dom)])
    return sample


def s_view(c):
    r = c.r
    x = rshape(r)
    shape = factor_shape(r, numel(x))
    if shape and r.random() < 0.3:
        shape[r.randrange(len(shape))] = -1
    if c.bad:
        if r.random() < 0.5 or len(shape) < 2:
            shape = factor_shape(r, numel(x) + r.randint(1, 3))  # another element count
        else:
            shape[0] = shape[1] = -1
    return Spec([Inp(x, c.dt)], {"shape": shape})


def s_permute(c):
    r = c.r
    x = rshape(r)
    n = len(x)
    dims = r.sample(range(n), n)
    dims = [d - n if r.random() < 0.3 else d for d in dims]
    if c.bad:
        if n >= 2 and r.random() < 0.4:
            dims[0] = dims[1] % n  # a repeated dim
        elif r.random() < 0.5:
            dims = dims[:-1] if dims else [0]  # wrong length
        else:
            dims = dims[:-1] + [bad_dim(r, n)] if dims else [1]
    return Spec([Inp(x, c.dt)], {"dims": dims})


def s_transpose(c):
    x = rshape(c.r)
    d0, d1 = rdim(c.r, len(x)), rdim(c.r, len(x))
    if c.bad:
        d1 = bad_dim(c.r, len(x))
    return Spec([Inp(x, c.dt)], {"d0": d0, "d1": d1})


def s_t(c):
    return Spec([Inp(rshape(c.r, 3, 4) if c.bad else rshape(c.r, 0, 2), c.dt)])


def s_dim_op(extra=0):
    """Ops taking one dim of the input (extra=1: a dim of the output, as unsqueeze)."""
    def sample(c):
        x = rshape(c.r)
        n = len(x) + extra
        if c.bad:
            d = bad_dim(c.r, n)
        elif extra:
            d = c.r.randint(-n, n - 1)
        else:
            d = rdim(c.r, len(x))
        return Spec([Inp(x, c.dt)], {"dim": d})
    return sample


def s_flatten(c):
    r = c.r
    x = rshape(r)
    n = max(len(x), 1)
    a, b = sorted([r.randrange(n), r.randrange(n)])
    if c.bad:
        if n >= 2 and r.random() < 0.5:
            a, b = n - 1, 0  # start after end
        else:
            b = bad_dim(r, len(x))
    neg = lambda d: d - n if r.random() < 0.3 and 0 <= d < n else d  # noqa: E731
    return Spec([Inp(x, c.dt)], {"start": neg(a), "end": neg(b)})


def s_unflatten(c):
    r = c.r
    x = rshape(r, 1, 4)
    d = rdim(r, len(x))
    n = x[d]
    sizes = factor_shape(r, n) or [1]
    if n > 0 and r.random() < 0.3:
        sizes[r.randrange(len(sizes))] = -1
    if c.bad:
        if r.random() < 0.5:
            sizes = factor_shape(r, n + r.randint(1, 3)) or [2]
        else:
            d = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], {"dim": d, "sizes": sizes})


def s_expand(c, allow_minus=True):
    """expand (sizes may be -1) and broadcast_to (sizes only: ops.rs reads usizes)."""
    r = c.r
    x = rshape(r, 0, 3)
    lead = [r.randint(0, 3) for _ in range(r.randint(0, 2))]
    shape = lead + [r.randint(0, 4) if s == 1 else (-1 if allow_minus and r.random() < 0.3 else s) for s in x]
    if numel([abs(s) for s in shape]) > MAX_NUMEL:
        raise Retry
    if c.bad:
        fixed = [i for i, s in enumerate(x) if s != 1]
        if fixed and (r.random() < 0.6 or not allow_minus):
            i = r.choice(fixed)
            shape[len(lead) + i] = x[i] + 1  # a non-1 dim cannot change
        elif allow_minus:
            shape = [-1] + shape  # -1 in a new leading dim
        else:
            shape = shape[len(lead) + 1:]  # fewer dims than the input
    return Spec([Inp(x, c.dt)], {"shape": shape})


def s_broadcast_to(c):
    return s_expand(c, allow_minus=False)


def s_narrow(c):
    r = c.r
    x = rshape(r, 0 if c.bad else 1, 4)
    d = rdim(r, len(x))
    n = x[d] if x else 1
    start = r.randint(-n, n)  # torch takes start in [-n, n]
    s0 = start + n if start < 0 else start
    length = r.randint(0, n - s0)
    if c.bad:
        u = r.random()
        if u < 0.5:
            length = n - s0 + r.randint(1, 2)  # past the end
        elif u < 0.75:
            start = r.choice([n + 1, -n - 1])
        else:
            d = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], {"dim": d, "start": start, "length": length})


def s_slice(c):
    r = c.r
    x = rshape(r, 0 if c.bad else 1, 4)
    bound = lambda: None if r.random() < 0.25 else r.randint(-7, 7)  # noqa: E731  (torch clamps)
    kw = {"dim": rdim(r, len(x)), "start": bound(), "end": bound(), "step": r.choice([1, 1, 2, 3])}
    if c.bad and x:
        if r.random() < 0.5:
            kw["step"] = 0
        else:
            kw["dim"] = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], kw)


def s_select(c):
    r = c.r
    x = list(rshape(r, 0 if c.bad else 1, 4))
    d = rdim(r, len(x))
    if x and x[d] == 0 and not c.bad:
        x[d] = r.randint(1, 3)
    n = x[d] if x else 0
    index = r.randint(-n, n - 1) if n else 0
    if c.bad and x:
        if r.random() < 0.6:
            index = r.choice([n, -n - 1])
        else:
            d = bad_dim(r, len(x))
    return Spec([Inp(tuple(x), c.dt)], {"dim": d, "index": index})


def s_chunk(c):
    r = c.r
    x = list(rshape(r, 0 if c.bad else 1, 4))
    kw = {"chunks": r.randint(1, 5), "dim": rdim(r, len(x))}
    if x and r.random() < 0.2:
        x[kw["dim"]] = 0  # chunks of an empty dim
    if c.bad and x:
        if r.random() < 0.6:
            kw["chunks"] = 0
        else:
            kw["dim"] = bad_dim(r, len(x))
    return Spec([Inp(tuple(x), c.dt)], kw)


def s_split(c):
    r = c.r
    x = rshape(r, 1, 4)
    kw = {"size": r.randint(1, 4), "dim": rdim(r, len(x))}
    if c.bad:
        if r.random() < 0.5:
            kw["size"] = 0
        else:
            kw["dim"] = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], kw)


def s_split_sizes(c):
    r = c.r
    x = rshape(r, 1, 4)
    d = rdim(r, len(x))
    n = x[d]
    cuts = sorted(r.randint(0, n) for _ in range(r.randint(0, 3)))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]  # zero sizes included
    if c.bad:
        if r.random() < 0.7:
            sizes[r.randrange(len(sizes))] += r.randint(1, 2)
        else:
            d = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], {"sizes": sizes, "dim": d})


# ================================================================ samplers: binary, scalar, compare
BIN_DOMAINS = {"div": ("any", "nonzero"), "pow": ("pow_base", "pow_exp"), "add": ("any", "any"),
               "sub": ("any", "any"), "mul": ("any", "any")}  # the others: "grid" (ties, equality)
BIN_EDGE = {"pow": ("pow_edge_base", "pow_edge_exp"), "div": ("zero_any", "zero_any")}


def no_wrap(doms, dts):
    """u8 with i64: when the i64 operand is 0-d (or u8 is), PyTorch computes in u8 and a
    negative i64 would wrap around (u8 - (-3) is u8 + 253): keep the i64 operand >= 0."""
    if U8 in dts and I64 in dts:
        i = dts.index(I64)
        doms[i] = "pos" if doms[i] in ("nonzero", "zero_any") else "cast"


def s_binary(c):
    """Two broadcastable operands (binary arithmetic, comparisons, logical ops); ~30% of
    different dtypes and ranks (often one 0-d); mutation: shapes that do not broadcast."""
    r = c.r
    a, b = bcast_shapes(r, 2)
    dt2, mixed = c.dt, r.random() < P_MIXED
    if mixed:
        dt2 = c.other_dtype()
        a, b = mixed_ranks(r, a, b)
    if c.bad:
        a, b = break_bcast(r, a, b)
    doms = list((BIN_EDGE.get(c.op) if c.edge else None) or BIN_DOMAINS.get(c.op, ("grid", "grid")))
    no_wrap(doms, [c.dt, dt2])
    return Spec([Inp(a, c.dt, doms[0]), Inp(b, dt2, doms[1])], {}, mixed=mixed)


def s_scalar(c):
    """`x <op> value` with a Python int or float. u8 inputs get int scalars that keep the
    exact result in 0..255, so that nothing depends on wrapping."""
    r, op, dt = c.r, c.op, c.dt
    x = rshape(r)
    compare = op[:2] in ("lt", "le", "gt", "ge", "eq", "ne")
    dom = "grid" if compare else {"rdiv_scalar": "nonzero", "rpow_scalar": "pow_exp",
                                  "pow_scalar": "pos" if dt.is_floating_point else "pow_base"}.get(op, "any")
    v = scalar(r)
    if op == "rpow_scalar" and isinstance(v, float) and v < 0:
        v = -v  # a negative base to a fractional power is NaN: not interesting
    if op == "pow_scalar" and isinstance(v, int) and not dt.is_floating_point:
        v = abs(v)  # integer tensors to negative int powers are refused (see the mutation)
    if dt == U8 and isinstance(v, int):
        v = {"sub_scalar": r.randint(0, 5), "rsub_scalar": r.randint(10, 15), "mul_scalar": r.randint(0, 5),
             "pow_scalar": r.randint(0, 3), "rpow_scalar": r.randint(0, 2)}.get(op, r.randint(0, 10))
        if op == "sub_scalar":
            dom = "u8_hi"
    if op == "div_scalar" and v == 0:
        v = type(v)(2)
    if c.edge and op == "pow_scalar":
        dom, v = "zero_pos", r.choice([0, 0.0, -1, -1.0, 0.5, 2, 1.5, -0.5])
    if c.edge and op == "rpow_scalar":
        dom, v = "pow_edge_exp", r.choice([0, 0.0, 1, 2.0, 0.5])
    # (`op in ... and c.bad`: only these ops have a mutation to offer)
    if op in ("sub_scalar", "rsub_scalar") and c.bad:
        dt = BOOL  # "-" on a bool tensor
    elif op == "pow_scalar" and c.bad:
        dt, v = I64, -r.randint(1, 2)  # integers to negative integer powers
    return Spec([Inp(x, dt, dom)], {"value": v})


def s_where(c):
    r = c.r
    sc, sx, sy = bcast_shapes(r, 3)
    cdt, ydt, mixed = BOOL, c.dt, r.random() < P_MIXED
    if mixed:
        ydt = c.other_dtype()
        sx, sy = mixed_ranks(r, sx, sy)
    if c.bad:
        if r.random() < 0.5:
            cdt = r.choice([U8, F32, I64])  # a non-bool condition
        else:
            sc, sx = break_bcast(r, sc, sx)
    doms = ["any", "any"]
    no_wrap(doms, [c.dt, ydt])
    return Spec([Inp(sc, cdt, "mask"), Inp(sx, c.dt, doms[0]), Inp(sy, ydt, doms[1])], {}, mixed=mixed)


def s_masked_fill(c):
    r = c.r
    x = rshape(r)
    k = r.randint(0, len(x))
    m = tuple(1 if r.random() < 0.3 else s for s in x[len(x) - k:])
    mdt = BOOL
    if c.bad:
        if r.random() < 0.5:
            mdt = r.choice([U8, F32, I64])  # a non-bool mask
        else:
            m = (r.choice([2, 3]),) + tuple(x) if r.random() < 0.5 else break_bcast(r, m, x)[0]
    return Spec([Inp(x, c.dt), Inp(m, mdt, "mask")], {"value": fill_value(r, c.dt)})


# ================================================================ samplers: reductions
RED_DOMAIN = {"prod": "prod", "max_all": "distinct", "min_all": "distinct", "amax": "distinct",
              "amin": "distinct", "max_dim": "distinct", "min_dim": "distinct", "argmax": "distinct",
              "argmin": "distinct", "norm": "distinct", "all": "mask", "any": "mask", "all_dims": "mask",
              "any_dims": "mask", "cumprod": "prod"}


def reduced(shape, dims):
    """`shape` with the dims in `dims` ([]: all of them) set to 1."""
    nd = len(shape)
    ds = {d % nd for d in dims} if nd and dims else set(range(nd))
    return tuple(1 if i in ds else s for i, s in enumerate(shape))


def edge_values(c, shape, dims):
    """Values at the singular points of the reduction `c.op` over `dims` (float dtypes)."""
    g, dt = c.g, c.dt
    rows = lambda p: (torch.rand(reduced(shape, dims), generator=g) < p).expand(shape)  # noqa: E731
    if c.op in ("var", "std"):  # zero variance: constant along the reduced dims
        return values(reduced(shape, dims), dt, "grid", g).expand(shape).contiguous()
    if c.op in ("logsumexp", "softmax", "log_softmax", "sdpa_float_mask"):  # -inf, whole rows of it
        if shape == ():
            return torch.full((), -math.inf, dtype=dt)
        return values(shape, dt, "ninf", g).masked_fill(rows(0.3), -math.inf).contiguous()
    if c.op == "norm":  # zeros, and whole zero rows (norm 0)
        return values(shape, dt, "zero_any", g).masked_fill(rows(0.3), 0.0).contiguous()
    return values(shape, dt, "grid", g)  # max/min/amax/amin: ties


def red_input(c, x, dims):
    dom = RED_DOMAIN.get(c.op, "any")
    if c.edge:
        return Inp(x, c.dt, values=edge_values(c, x, dims), expand="no")
    if dom == "mask" and c.dt.is_floating_point and c.r.random() < 0.4:
        dom = "grid"  # any non-zero counts as true
    return Inp(x, c.dt, dom, expand="no" if dom == "distinct" else "ok")


def s_reduce_dims(c):
    """Reductions over a `dims` list with `keepdim` (sum, mean, prod, amax, all_dims, ...)."""
    r = c.r
    x = rshape(r)
    if c.edge and c.op == "logsumexp" and r.random() < 0.3:
        x = ()  # a 0-d -inf
    dims = draw_dims(r, len(x), c.bad)
    kw = {"dims": dims, "keepdim": r.random() < 0.4}
    if c.op in ("var", "std"):
        kw["correction"] = r.choice([0.0, 1.0, 1.0, 0.5, 2.0])
    if c.op == "norm":
        kw["p"] = r.choice([2.0, 2.0, 1.0, "inf"] + ([0.5, 1.5, 3.0] * (3 if c.edge else 1)))
    return Spec([red_input(c, x, dims if not c.mutate else [])], kw)


def s_reduce_all(c):
    """Whole-tensor reductions; the mutation: max/min of an empty tensor."""
    x = rshape(c.r)
    if c.op in ("max_all", "min_all") and c.bad:
        x = rshape(c.r, 1, 3)
        x = (0,) + x[1:]
    return Spec([red_input(c, x, [])])


def s_reduce_dim(c, nullable=False):
    """max_dim/min_dim/argmax/argmin/cumsum/cumprod/softmax/log_softmax: one dim."""
    r = c.r
    x = rshape(r)
    if c.edge and c.op in ("softmax", "log_softmax") and r.random() < 0.3:
        x = ()  # a 0-d -inf
    d = rdim(r, len(x))
    if nullable and r.random() < 0.25:
        d = None
    if c.bad:
        if numel(x) > 0 and r.random() < 0.4 and c.op in ("max_dim", "min_dim", "argmax", "argmin"):
            x = (0,) + x[1:] if x else (0,)  # an empty reduced dim
            d = 0
        else:
            d = bad_dim(r, len(x))
    kw = {"dim": d}
    if c.op in ("max_dim", "min_dim", "argmax", "argmin"):
        kw["keepdim"] = r.random() < 0.4
    return Spec([red_input(c, x, [] if d is None or c.mutate else [d])], kw)


# ================================================================ samplers: unary
UNARY_DOMAIN = {"abs": "nonzero", "sign": "nonzero", "log": "pos", "log2": "pos", "log1p": "pos",
                "sqrt": "pos", "rsqrt": "pos", "reciprocal": "nonzero", "tan": "small", "relu": "nonzero",
                "floor": "frac", "ceil": "frac", "round": "frac", "leaky_relu": "nonzero", "elu": "nonzero",
                "softplus": "nonzero"}
UNARY_EDGE = {"sqrt": "zero_pos", "rsqrt": "zero_pos", "log": "zero_pos", "log2": "zero_pos",
              "reciprocal": "zero_any", "log1p": "m1_pos", "abs": "zero_any", "sign": "zero_any",
              "relu": "zero_any", "leaky_relu": "zero_any", "elu": "zero_any", "floor": "half",
              "ceil": "half", "round": "half"}


def s_unary(c):
    r = c.r
    x = rshape(r)
    dom = UNARY_EDGE[c.op] if c.edge else UNARY_DOMAIN.get(c.op, "any")
    dt = c.dt
    if c.bad:  # all a unary op can refuse is a dtype (bool for most, ints for some)
        dt = BOOL if r.random() < 0.6 else r.choice([U8, I64])
    kw = {}
    if c.op == "leaky_relu":
        kw["slope"] = r.choice([0.01, 0.1, 0.2, 0.5, -0.1])
    elif c.op == "elu":
        kw["alpha"] = r.choice([1.0, 0.5, 1.5, 2.0])
    elif c.op == "softplus":
        kw["beta"] = r.choice([1.0, 0.5, 2.0, 3.0])
        kw["threshold"] = r.choice([20.0, 1.0, 2.0, 5.0])
    return Spec([Inp(x, dt, dom)], kw)


def clamp_bound(c):
    """A clamp bound; in edge cases on grid halves, which the "grid" values then tie with."""
    if c.edge:
        return c.r.choice([-1, -0.5, 0, 0.5, 1.0])
    if c.dt == U8:
        return scalar(c.r, 0, 9)
    return scalar(c.r, -2, 2) if c.r.random() < 0.5 else round(c.r.choice([-0.5, 0.5]) + c.r.uniform(-0.05, 0.05), 2)


def s_clamp(c):
    """clamp and clamp_ (min/max each possibly None); mutation: both None."""
    r = c.r
    x = rshape(r)
    lo, hi = clamp_bound(c), clamp_bound(c)
    if r.random() < 0.75 and lo > hi:
        lo, hi = hi, lo  # min > max is allowed (all max), but rarer
    u = r.random()
    if c.bad:
        lo = hi = None
    elif u < 0.2:
        lo = None
    elif u < 0.4:
        hi = None
    dom = "grid" if c.edge else "clamp" if c.dt.is_floating_point else "any"
    return Spec([Inp(x, c.dt, dom, expand="no" if c.op.endswith("_") else "ok")], {"min": lo, "max": hi})


def s_clamp_one(c):
    x = rshape(c.r)
    return Spec([Inp(x, c.dt, "grid" if c.edge else "clamp")], {"value": clamp_bound(c)})


# ================================================================ samplers: matmul
def mm_dom(dt):
    return "small_int" if dt in (U8, I64) else "any"  # u8 sums of products stay below 256


def s_matmul(c):
    """a (..., n, k) @ b (..., k, m), either side possibly 1-d, batch dims broadcasting."""
    r = c.r
    ra, rb = r.choice([1, 2, 2, 3, 4]), r.choice([1, 2, 2, 3, 4])
    n, k, m = r.randint(0, 4), r.choice([0, 1, 2, 3, 4, 5]), r.randint(0, 4)
    batch = list(rshape(r, rank=max(ra, rb) - 2, empty=False, cap=6)) if max(ra, rb) > 2 else []
    a = batch[len(batch) - (ra - 2):] + [n, k] if ra >= 2 else [k]
    b = batch[len(batch) - (rb - 2):] + [k, m] if rb >= 2 else [k]
    if ra > 2 and r.random() < 0.3:
        a[0] = 1  # broadcast against b's batch
    dt2, mixed = c.dt, False
    if c.bad:
        u = r.random()
        if u < 0.5:
            a[-1] = k + 1  # inner dims differ
        elif u < 0.8:
            dt2, mixed = c.other_dtype(), True  # matmul wants one dtype
        elif ra > 2 and rb > 2:
            a[-3], b[-3] = 2, 3  # batch dims that do not broadcast
        else:
            a[-1] = k + 1
    return Spec([Inp(tuple(a), c.dt, mm_dom(c.dt)), Inp(tuple(b), dt2, mm_dom(dt2))], mixed=mixed)


def s_mm_fixed(c):
    """mm (2-d), bmm (3-d, equal batch), outer (1-d), dot (1-d, equal length)."""
    r = c.r
    n, k, m, bt = r.randint(0, 4), r.randint(0, 5), r.randint(0, 4), r.randint(1, 3)
    a, b = {"mm": ([n, k], [k, m]), "bmm": ([bt, n, k], [bt, k, m]), "outer": ([n], [m]),
            "dot": ([k], [k])}[c.op]
    dt2, mixed = c.dt, False
    if c.op == "outer" and r.random() < P_MIXED:  # outer promotes, the others need one dtype
        dt2, mixed = c.other_dtype(), True
    if c.bad:
        u = r.random()
        if c.op == "outer" or u >= 0.85:
            a = a + [2]  # one dim too many
        elif u < 0.4:
            b[{"mm": 0, "bmm": 1, "dot": 0}[c.op]] += 1  # inner dims differ
        elif u < 0.7:
            dt2, mixed = c.other_dtype(), True
        elif c.op == "bmm":
            b[0] += 1  # batch sizes differ
        else:
            b = b + [1]
    return Spec([Inp(tuple(a), c.dt, mm_dom(c.dt)), Inp(tuple(b), dt2, mm_dom(dt2))], mixed=mixed)


# ================================================================ samplers: in-place
def s_inplace_binary(c):
    """x.op_(y): y broadcasts to x; mutations: y larger than x, shapes that do not broadcast,
    or x an expanded view (PyTorch refuses to write through overlapping elements)."""
    r = c.r
    x = rshape(r)
    k = r.randint(0, len(x))
    y = tuple(1 if r.random() < 0.3 else s for s in x[len(x) - k:])
    dt2, mixed = c.dt, False
    if r.random() < P_MIXED:
        dt2, mixed = c.other_dtype(), True
    xexp = "no"
    if c.bad:
        u = r.random()
        if u < 0.4 and any(s >= 2 for s in x):
            xexp = "force"
        elif u < 0.7:
            y = (r.choice([2, 3]),) + tuple(x)
        else:
            x, y = break_bcast(r, x, y)
    ydom = {"div_": "nonzero", "copy_": "cast" if c.dt in INTS else "any"}.get(c.op, "any")
    if c.dt == U8 and c.op != "copy_":
        ydom = "nonzero" if c.op == "div_" else "pow_base"  # nothing wraps around 0..255
    return Spec([Inp(x, c.dt, expand=xexp), Inp(y, dt2, ydom)], mixed=mixed)


def s_inplace_unary(c):
    """zero_, fill_, add_scalar_, mul_scalar_; mutation: an expanded target."""
    r = c.r
    x = rshape(r)
    xexp = "force" if c.bad and any(s >= 2 for s in x) else "no"
    kw = {}
    if c.op != "zero_":
        kw["value"] = r.randint(0, 5) if c.op == "mul_scalar_" and c.dt == U8 else fill_value(r, c.dt)
    return Spec([Inp(x, c.dt, expand=xexp)], kw)


def s_clamp_inplace(c):
    spec = s_clamp(c)
    if c.mutate and any(s >= 2 for s in spec.inputs[0].shape) and c.r.random() < 0.5:
        spec.kwargs = {"min": -0.5, "max": 0.5}  # valid bounds, but an expanded target
        spec.inputs[0].expand = "force"
    return spec


# ================================================================ samplers: index and shape ops
def idx_inp(shape, n):
    """An index input with values in range(n) (any view of it is fine, expand included)."""
    return Inp(tuple(shape), I64, f"idx:{max(n, 1)}")


def corrupt_index(c, inp, n):
    """Index mutations PyTorch rejects: a float/bool index, out of range, negative."""
    r = c.r
    v = values(inp.shape, I64, inp.domain, c.g) if inp.values is None else inp.values.clone()
    u = r.random()
    if u < 0.35 or v.numel() == 0:
        inp.dtype = r.choice([F32, F64, BOOL]) if v.numel() else F32
        inp.values = v.to(inp.dtype)
        return
    flat = v.reshape(-1)
    flat[r.randrange(flat.numel())] = n + r.randint(0, 2) if u < 0.7 else -1
    inp.values = flat.reshape(v.shape)


def s_index_select(c):
    r = c.r
    x = rshape(r, 0, 4)
    d = rdim(r, len(x))
    n = x[d] if x else 1
    ishape = (r.randint(0, 5),) if r.random() < 0.85 else ()
    if n == 0:
        ishape = (0,)
    idx = idx_inp(ishape, n)
    spec = Spec([Inp(x, c.dt), idx], {"dim": d})
    if c.bad:
        u = r.random()
        if u < 0.6:
            corrupt_index(c, idx, n)
        elif u < 0.8:
            idx.shape = (2, 2)  # index_select wants a vector
        else:
            spec.kwargs["dim"] = bad_dim(r, len(x))
    return spec


def gather_like(c, unique):
    """(x shape, index shape, dim, dim >= 0, n = x.size(dim)) with index.size(d) <= x.size(d)
    for d != dim (and for d == dim too when the index must be unique)."""
    r = c.r
    x = rshape(r, 0, 4)
    d = rdim(r, len(x))
    dd = d % max(len(x), 1)
    n = x[dd] if x else 1
    ishape = [r.randint(0, s) for s in x]
    if x:
        ishape[dd] = r.randint(0, n) if unique else r.randint(0, 4)
        if n == 0:
            ishape[dd] = 0
    return x, tuple(ishape), d, dd, n


def s_gather(c):
    x, ishape, d, dd, n = gather_like(c, unique=False)
    idx = idx_inp(ishape, n)
    spec = Spec([Inp(x, c.dt), idx], {"dim": d})
    if c.bad:
        u = c.r.random()
        if u < 0.6 or not x:
            corrupt_index(c, idx, n)
        elif u < 0.8:
            idx.shape = idx.shape + (2,)  # rank mismatch
        else:
            spec.kwargs["dim"] = bad_dim(c.r, len(x))
    return spec


def s_scatter(c):
    """scatter / scatter_value / scatter_add / index_add (src may be larger than the index)."""
    r, op = c.r, c.op
    if op == "index_add":
        x = rshape(r, 1, 4)
        d = rdim(r, len(x))
        dd = d % len(x)
        n = x[dd]
        ishape = (r.randint(0, 4) if n else 0,)
        src = tuple(ishape[0] if i == dd else s for i, s in enumerate(x))
        idx = idx_inp(ishape, n)
    else:
        x, ishape, d, dd, n = gather_like(c, unique=op != "scatter_add")
        if op == "scatter_add":
            idx = idx_inp(ishape, n)
        else:  # unique targets: duplicates would make the result depend on write order
            idx = Inp(ishape, I64, values=perm_index(ishape, dd, n, c.g), expand="no")
        src = tuple(s + (1 if r.random() < 0.2 else 0) for s in ishape)
    ins = [Inp(x, c.dt), idx]
    kw = {"dim": d}
    if op == "scatter_value":
        kw["value"] = fill_value(r, c.dt)
    else:
        ins.append(Inp(src, c.dt))
    spec = Spec(ins, kw)
    if c.bad:
        u = r.random()
        if u < 0.5:
            corrupt_index(c, idx, n)
        elif u < 0.75 and op != "scatter_value":
            ins[2].dtype = c.other_dtype()  # src of another dtype
            spec.mixed = True
        else:
            kw["dim"] = bad_dim(r, len(x))
    return spec


def s_masked_select(c):
    r = c.r
    a, b = bcast_shapes(r, 2)
    mdt = BOOL
    if c.bad:
        if r.random() < 0.5:
            mdt = r.choice([U8, F32, I64])
        else:
            a, b = break_bcast(r, a, b)
    return Spec([Inp(a, c.dt), Inp(b, mdt, "mask")])


def sortable(c, x, d):
    """The input of sort/argsort/topk: distinct values, so that the indices are unambiguous.
    Bools can only be distinct along lines of at most 2."""
    if c.dt != BOOL or not x:
        return x, Inp(x, c.dt, "distinct", expand="no")
    x = list(x)
    dd = d % len(x)
    x[dd] = min(x[dd], 2)
    x = tuple(x)
    return x, Inp(x, BOOL, values=perm_index(x, dd, 2, c.g).to(BOOL), expand="no")


def s_topk(c):
    r = c.r
    x = rshape(r)
    d = rdim(r, len(x))
    x, inp = sortable(c, x, d)
    n = x[d % len(x)] if x else 1
    srt = r.random() < 0.8
    k = r.randint(0, n) if srt else r.randint(0, min(n, 1))  # unsorted: only k <= 1 is unambiguous
    kw = {"k": k, "dim": d, "largest": r.random() < 0.5, "sorted": srt}
    if c.bad:
        if r.random() < 0.6:
            kw["k"] = n + r.randint(1, 2)
        else:
            kw["dim"] = bad_dim(r, len(x))
    return Spec([inp], kw)


def s_sort(c):
    r = c.r
    x = rshape(r)
    d = rdim(r, len(x))
    x, inp = sortable(c, x, d)
    kw = {"dim": bad_dim(r, len(x)) if c.bad else d, "descending": r.random() < 0.5}
    return Spec([inp], kw)


def s_flip(c):
    r = c.r
    x = rshape(r)
    n = len(x)
    dims = r.sample(range(n), r.randint(0, n)) if n else r.choice([[], [0]])
    dims = [d - n if r.random() < 0.3 else d for d in dims]
    if c.bad:
        dims = draw_dims(r, n, bad=True)
    return Spec([Inp(x, c.dt)], {"dims": dims})


def s_roll(c):
    r = c.r
    x = rshape(r)
    n = len(x)
    if r.random() < 0.2 or not n:
        dims, shifts = [], [r.randint(-7, 7)]  # roll the flattened tensor
    else:
        dims = r.sample(range(n), r.randint(1, n))
        dims = [d - n if r.random() < 0.3 else d for d in dims]
        shifts = [r.randint(-7, 7) for _ in dims]
    if c.bad:
        if r.random() < 0.5:
            shifts = shifts + [1]
        else:
            dims, shifts = [bad_dim(r, n)], [1]
    return Spec([Inp(x, c.dt)], {"shifts": shifts, "dims": dims})


def s_repeat(c):
    """repeats >= 0 (ops.rs reads usizes); mutation: fewer repeats than dims."""
    r = c.r
    x = rshape(r, cap=24)
    reps = [r.choice([0, 1, 1, 2, 3]) for _ in range(len(x) + r.randint(0, 2))]
    if c.bad and x:
        reps = reps[: len(x) - 1]
    return Spec([Inp(x, c.dt)], {"repeats": reps})


def s_repeat_interleave(c):
    r = c.r
    x = rshape(r, cap=24)
    d = None if r.random() < 0.3 else rdim(r, len(x))
    if c.bad:
        d = bad_dim(r, len(x))
    return Spec([Inp(x, c.dt)], {"repeats": r.randint(0, 3), "dim": d})


def s_pad(c):
    """pad_constant (any rank, negative pads crop), pad_reflect/pad_replicate (the last 1-3
    dims, with 1 or 2 batch dims in front)."""
    r, op = c.r, c.op
    kw = {}
    if op == "pad_constant":
        x = rshape(r, 1, 4)
        m = r.randint(1, len(x))
        pads = []
        for i in range(m):
            size = x[len(x) - 1 - i]
            lo = r.randint(-min(size, 2), 3)
            hi = r.randint(-min(size + min(lo, 0), 2), 3)  # never crops below size 0
            pads += [lo, hi]
        kw["value"] = float(fill_value(r, c.dt))  # ops.rs reads it with k.f: a plain float
        if c.bad:
            u = r.random()
            if u < 0.35:
                pads = pads + [1]  # odd length
            elif u < 0.7:
                pads = pads + [1, 1] * (len(x) + 1 - m)  # more pairs than dims
            else:
                pads[0] = -(x[-1] + 1 + max(pads[1], 0))  # crops below size 0
    else:
        m = r.randint(1, 3)
        x = rshape(r, rank=m + r.randint(1, 2), empty=False)
        pads = []
        for i in range(m):
            size = x[len(x) - 1 - i]
            top = size - 1 if op == "pad_reflect" else 3  # reflect needs pad < size
            pads += [r.randint(0, min(top, 3)), r.randint(0, min(top, 3))]
        if c.bad:
            if op == "pad_reflect" and r.random() < 0.6:
                pads[0] = x[-1] + r.randint(0, 1)
            else:
                x = x[len(x) - m:] if r.random() < 0.5 else x
                pads = pads + [1, 1] * (3 - m + 1)  # 4 padded dims: unsupported
    kw["pads"] = pads
    return Spec([Inp(x, c.dt)], kw)


def s_tri(c):
    r = c.r
    x = rshape(r, 0, 1) if c.bad else rshape(r, 2, 4)
    return Spec([Inp(x, c.dt)], {"diagonal": r.randint(-4, 4)})


def s_one_hot(c):
    r = c.r
    x = rshape(r, 0, 3, cap=12)
    n = r.randint(1, 5)
    vals = torch.randint(0, n, x, generator=c.g)
    kw = {"num_classes": r.choice([-1, n, n + 1, n + 2])}
    if kw["num_classes"] == -1 and numel(x) == 0 and not c.mutate:
        kw["num_classes"] = n
    inp = Inp(x, c.dt, values=vals.to(c.dt))
    if c.bad and numel(x) > 0:
        flat = vals.reshape(-1).clone()
        if r.random() < 0.5:
            flat[r.randrange(flat.numel())] = -1
        else:
            kw["num_classes"] = max(int(vals.max()), 1)
            flat[0] = kw["num_classes"]  # a class out of range
        inp.values = flat.reshape(x).to(c.dt)
    elif c.mutate:
        kw["num_classes"] = -1  # cannot infer the class count of an empty tensor
    return Spec([inp], kw)


def s_cat(c):
    """cat/stack/hstack/vstack over 1..4 tensors, some of another dtype (promotion)."""
    r, op = c.r, c.op
    count = r.randint(1, 4)
    if op == "stack":
        x = rshape(r, 0, 3, cap=16)
        shapes = [x] * count
        kw = {"dim": r.randint(-len(x) - 1, len(x))}
    else:
        x = list(rshape(r, 1 if op == "cat" else 0, 3, cap=16))
        cd = {"cat": rdim(r, len(x)) if x else 0, "vstack": 0, "hstack": 1 if len(x) >= 2 else 0}[op]
        shapes = []
        for _ in range(count):
            s = list(x)
            if s and (op != "vstack" or len(s) >= 2):
                s[cd] = r.randint(0, 3)
            shapes.append(tuple(s))
        if op == "cat" and r.random() < 0.1:
            shapes[r.randrange(count)] = (0,)  # legacy: 1-d empty tensors are skipped
        kw = {"dim": cd} if op == "cat" else {}
    dts = [c.dt] * count
    mixed = count > 1 and r.random() < 0.2
    if mixed:
        dts[r.randrange(1, count)] = c.other_dtype()
    if c.bad:
        u = r.random()
        if u < 0.5 and shapes[0]:
            s = list(shapes[-1])
            j = r.randrange(len(s))
            if op == "cat" and j == kw["dim"] % len(s):
                j = (j + 1) % len(s)
            s[j] += 1  # sizes differ outside the cat dim
            shapes = shapes + [tuple(s)] if count == 1 else shapes[:-1] + [tuple(s)]
            dts = dts + [c.dt] if count == 1 else dts
        elif u < 0.75 and "dim" in kw:
            kw["dim"] = bad_dim(r, len(shapes[0]) + (op == "stack"))
        elif op == "cat":
            shapes[0] = ()  # zero-dimensional tensors cannot be concatenated
        else:
            shapes, dts = [], []  # no tensors at all
    return Spec([Inp(s, d) for s, d in zip(shapes, dts)], kw, mixed=mixed)


# ================================================================ samplers: attention
def s_sdpa(c):
    """q (..., L, E), k (..., S, E), v (..., S, Ev) with broadcast batch dims; masks broadcast
    to (..., L, S). Head dims <= 8, sequences <= 7."""
    r, op = c.r, c.op
    batch = list(rshape(r, 0, 2, empty=False, cap=6))
    if op == "sdpa" and not batch and r.random() < 0.5:
        batch = [r.randint(1, 3)]
    L, S = r.choice([0, 1, 2, 3, 4, 5, 6]), r.choice([0, 1, 2, 3, 4, 5, 7])
    E, Ev = r.randint(1, 8), r.randint(1, 8)
    if r.random() < 0.85:
        L, S = max(L, 1), max(S, 1)
    kb = [1 if r.random() < 0.3 else b for b in batch][r.randint(0, len(batch)) if r.random() < 0.2 else 0:]
    q, k, v = batch + [L, E], kb + [S, E], kb + [S, Ev]
    if any(numel(s) > 64 for s in (q, k, v)):
        raise Retry
    ins = [Inp(tuple(q), c.dt), Inp(tuple(k), c.dt), Inp(tuple(v), c.dt)]
    kw = {}
    if op == "sdpa":
        kw = {"is_causal": r.random() < 0.4, "scale": None if r.random() < 0.6 else round(r.uniform(0.1, 1.0), 2)}
    else:
        full = batch + [L, S]
        kk = r.randint(2, len(full))
        m = [1 if r.random() < 0.3 else s for s in full[len(full) - kk:]]
        if op == "sdpa_bool_mask":
            ins.append(Inp(tuple(m), BOOL, "mask"))
        elif c.edge:  # -inf entries and fully masked rows
            ins.append(Inp(tuple(m), c.dt, values=edge_values(c, tuple(m), [-1]), expand="no"))
        else:
            ins.append(Inp(tuple(m), c.dt, "any"))
    if c.bad:
        u = r.random()
        if u < 0.3:
            ins[1].shape = ins[1].shape[:-1] + (E + 1,)  # q and k head dims differ
        elif u < 0.55:
            ins[2].shape = ins[2].shape[:-2] + (S + 1, Ev)  # k and v lengths differ
        elif u < 0.8:
            ins[r.randint(1, len(ins) - 1)].dtype = c.other_dtype()
        elif op != "sdpa":
            ins[3].shape = ins[3].shape[:-1] + (S + 2,)  # a mask that does not broadcast
        else:
            ins[1].shape = (5,) + ins[1].shape
    return Spec(ins, kw)


# ================================================================ samplers: einsum and nn ops
EINSUM_TEMPLATES = [
    "ij,jk->ik", "ij,jk", "bij,bjk->bik", "bqd,bkd->bqk", "ii->i", "ii", "iji->ji", "i,i->", "i,j->ij",
    "ij->", "ij->ji", "...ij,...jk->...ik", "...i,...i->...", "i...->...i", "...j->j", "ij,ij,ij->i",
    "ij,jk,kl->il", "Ab,bC", ",->", ",i->i", "ij,jk->j", "ii,i->i", "bijk,bkj->bi",
]


def s_einsum(c):
    """An equation from EINSUM_TEMPLATES with random label sizes (0-4), ellipsis dims of rank
    0-2 that broadcast, and now and then a labelled dim of size 1 that broadcasts."""
    r = c.r
    eq = r.choice(EINSUM_TEMPLATES)
    lhs = eq.split("->")[0].split(",")
    sizes = {ch: r.choice([0, 1, 2, 2, 3, 3, 4]) for ch in set(eq) if ch.isalpha()}
    ell = list(rshape(r, 0, 2, empty=False, cap=6))
    shapes = []
    for term in lhs:
        core = term.replace("...", "")
        s = [sizes[ch] for ch in core]
        if "..." in term:
            e = ell[r.randint(0, len(ell)):]
            e = [1 if r.random() < 0.25 else d for d in e]
            pos = term.index("...")
            s = s[:pos] + e + s[pos:]
        if s and r.random() < 0.15:
            j = r.randrange(len(s))
            if core.count(core[j] if j < len(core) else "?") <= 1:
                s[j] = 1  # a labelled dim that broadcasts
        shapes.append(s)
    dts = [c.dt] * len(shapes)
    if c.bad:
        u = r.random()
        if u < 0.3 and any(shapes):
            i = r.choice([i for i, s in enumerate(shapes) if s])
            j = r.randrange(len(shapes[i]))
            shapes[i][j] = shapes[i][j] + 2  # a size that does not broadcast
        elif u < 0.5:
            shapes = shapes + [shapes[-1]] if r.random() < 0.5 or len(shapes) == 1 else shapes[:-1]
            dts = [c.dt] * len(shapes)
        elif u < 0.7:
            shapes[0] = shapes[0] + [2]  # one dim more than subscripts
        elif u < 0.85 and len(shapes) > 1:
            dts[1] = c.other_dtype()
        else:
            eq = eq.replace("->", "->z") if "->" in eq else eq + "->z"  # an unknown output letter
    if any(numel(s) > 48 for s in shapes):
        raise Retry
    return Spec([Inp(tuple(s), d, mm_dom(d)) for s, d in zip(shapes, dts)], {"equation": eq},
                mixed=len(set(dts)) > 1)


def s_diagonal(c):
    r = c.r
    x = rshape(r, 2, 4)
    n = len(x)
    d1 = r.randrange(n)
    d2 = r.choice([d for d in range(n) if d != d1])
    kw = {"offset": r.randint(-4, 4), "dim1": d1 - n if r.random() < 0.3 else d1,
          "dim2": d2 - n if r.random() < 0.3 else d2}
    if c.bad:
        u = r.random()
        if u < 0.4:
            kw["dim2"] = kw["dim1"]
        elif u < 0.7:
            kw["dim1"] = bad_dim(r, n)
        else:
            x = rshape(r, 0, 1)
    return Spec([Inp(x, c.dt)], kw)


def s_pool1d(c):
    """max_pool1d / avg_pool1d on (N, C, L) or (C, L): kernels 1-4, strides, padding up to half
    the kernel, dilation and ceil mode (max pool)."""
    r, op = c.r, c.op
    k = r.randint(1, 4)
    lead = [r.randint(0, 2), r.randint(1, 3)] if r.random() < 0.7 else [r.randint(1, 3)]
    x = lead + [r.randint(1, 8)]
    kw = {"kernel_size": k, "stride": None if r.random() < 0.4 else r.randint(1, 3),
          "padding": r.randint(0, k // 2)}
    if op == "max_pool1d":
        kw["dilation"] = r.choice([1, 1, 2])
        kw["ceil_mode"] = r.random() < 0.4
    else:
        kw["count_include_pad"] = r.random() < 0.5
    if c.bad:
        u = r.random()
        if u < 0.4:
            kw["padding"] = k // 2 + 1  # more than half the kernel
        elif u < 0.7:
            x = [1] + x if len(x) == 3 else x[1:]  # 4-d or 1-d
        else:
            kw["kernel_size"] = x[-1] + 2 * kw["padding"] + 1  # window larger than the input
    if numel(x) > 48:
        raise Retry
    return Spec([Inp(tuple(x), c.dt, "distinct" if op == "max_pool1d" else "any")], kw)


def s_adaptive_max_pool2d(c):
    r = c.r
    x = ([r.randint(0, 2)] if r.random() < 0.7 else []) + [r.randint(1, 2), r.randint(1, 6), r.randint(1, 6)]
    kw = {"output_size": [r.randint(1, 5), r.randint(1, 5)]}
    if c.bad:
        u = r.random()
        if u < 0.5:
            x[-1 if r.random() < 0.5 else -2] = 0  # an empty plane
        else:
            x = x[-2:] if r.random() < 0.5 else [1] + x + ([1] if len(x) == 4 else [])
    if numel(x) > 48 or numel(x[:-2]) * numel(kw["output_size"]) > 90:
        raise Retry
    return Spec([Inp(tuple(x), c.dt, "distinct")], kw)


def s_pixel_shuffle(c):
    """pixel_shuffle: channels c*r*r; pixel_unshuffle: height and width multiples of r."""
    r, op = c.r, c.op
    f = r.choice([1, 2, 2, 3])
    lead = list(rshape(r, 0, 2, cap=4))
    if op == "pixel_shuffle":
        x = lead + [r.randint(0, 2) * f * f, r.randint(0, 3), r.randint(0, 3)]
    else:
        # Never empty: PyTorch 2.15 returns an empty input of pixel_unshuffle unchanged, in
        # the input's shape instead of the output's.
        lead = [max(d, 1) for d in lead]
        x = lead + [r.randint(1, 2), r.randint(1, 2) * f, r.randint(1, 2) * f]
    key = "upscale_factor" if op == "pixel_shuffle" else "downscale_factor"
    if c.bad:
        u = r.random()
        if u < 0.4:
            f = 0
        elif u < 0.7:
            x = x[-2:]
        elif op == "pixel_shuffle":
            f = max(f, 2)
            x[-3] = f * f + 1
        else:
            f = max(f, 2)
            x[-1 if r.random() < 0.5 else -2] = f + 1
    if numel(x) > 64:
        raise Retry
    return Spec([Inp(tuple(x), c.dt)], {key: f})


def s_interpolate(c):
    """interpolate: nearest / nearest-exact (3-5-d), linear (3-d), bilinear (4-d), by size or by
    scale factor (one value or one per dim), align_corners and recompute_scale_factor."""
    r = c.r
    mode = r.choice(["nearest", "nearest", "nearest-exact", "linear", "bilinear", "bilinear"])
    spatial = {"linear": 1, "bilinear": 2}.get(mode) or r.choice([1, 2, 2, 3])
    x = [r.randint(0, 2), r.randint(1, 2)] + [r.randint(1, 4) for _ in range(spatial)]
    kw = {"size": None, "scale_factor": None, "mode": mode, "align_corners": None, "recompute_scale_factor": None}
    one = r.random() < 0.3
    if r.random() < 0.5:
        kw["size"] = [r.randint(1, 5) for _ in range(1 if one else spatial)]
    else:
        kw["scale_factor"] = [r.choice([0.5, 0.7, 1.0, 1.3, 1.5, 1.7, 2.0, 2.5]) for _ in range(1 if one else spatial)]
        kw["recompute_scale_factor"] = r.choice([None, None, True, False])
    if mode in ("linear", "bilinear"):
        kw["align_corners"] = r.choice([None, True, False])
    if c.bad:
        u = r.random()
        if u < 0.25:
            kw["align_corners"] = True
            kw["mode"] = "nearest"
        elif u < 0.45:
            kw["size"], kw["scale_factor"] = [2] * spatial, [2.0] * spatial
        elif u < 0.65 and mode in ("linear", "bilinear"):
            x = x + [2]  # the wrong rank for the mode
        elif u < 0.8:
            kw["size"], kw["scale_factor"] = None, None
        else:
            kw["size"], kw["scale_factor"] = [0] * spatial, None
    return Spec([Inp(tuple(x), c.dt)], kw)


def interpolate(x, k):
    # A one-element list stands for PyTorch's single number (every spatial dim).
    size, sf = k["size"], k["scale_factor"]
    size = size[0] if size is not None and len(size) == 1 else size
    sf = sf[0] if sf is not None and len(sf) == 1 else sf
    return F.interpolate(x, size=size, scale_factor=sf, mode=k["mode"], align_corners=k["align_corners"],
                         recompute_scale_factor=k["recompute_scale_factor"])


# ================================================================ the op table: torch twins
def tdims(dims):
    return None if dims == [] else dims


def prod_dims(x, dims, keepdim):
    """gen_fixtures' _prod (torch has no multi-dim prod); the dims are first validated by
    torch itself (a sum over them), so bad dims raise torch's own error."""
    torch.sum(torch.zeros((), dtype=F32).expand(x.shape), tdims(dims))
    if x.dim() == 0:
        return torch.prod(x)
    return _prod(x, dims, keepdim)


def logsumexp(x, dims, keepdim):
    # torch.logsumexp(x, ()) fails on n-d inputs; [] means all dims, as for the other reductions.
    return torch.logsumexp(x, dims if dims else list(range(x.dim())), keepdim)


def aten_slice(x, dim, start, end, step):
    # What x[..., start:end:step] runs, but with torch's own errors for a bad dim or a 0-d input.
    return torch.ops.aten.slice.Tensor(x, dim, start, end, step)


sdpa = F.scaled_dot_product_attention


@dataclass
class OpDef:
    name: str
    fn: Callable  # fn(inputs, kwargs) -> Tensor | tuple of Tensors
    sample: Callable  # sample(Ctx) -> Spec
    native: list  # the dtypes the op is meant for; the others come up too
    n: int = 25
    edge: bool = False  # has singular points worth aiming at

    @property
    def inplace(self):
        return self.name.endswith("_")


OPS = {}


def op(name, fn, sample, native, n=25, edge=False):
    OPS[name] = OpDef(name, fn, sample, list(native), n, edge)


UNARY_DT = [F16, BF16, F32, F64, I64]
RED_DT = [F16, BF16, F32, F64, I64, U8]
NO_BOOL = [U8, I64] + FLOATS
FI = [F32, F64, I64]


def register():
    """Every op of ops.rs with its PyTorch twin (as in gen_fixtures.py), sampler, own dtypes
    and case count."""
    # ---- views and shapes
    op("view", lambda x, k: x[0].view(k["shape"]), s_view, ALL, 30)
    op("reshape", lambda x, k: x[0].reshape(k["shape"]), s_view, [F32, F64, I64])
    op("permute", lambda x, k: x[0].permute(k["dims"]), s_permute, [F32, F64, I64, BOOL])
    op("transpose", lambda x, k: x[0].transpose(k["d0"], k["d1"]), s_transpose, [F32, F64, U8])
    op("t", lambda x, k: x[0].t(), s_t, [F32, F64], 15)
    op("squeeze", lambda x, k: x[0].squeeze(), s_plain(), [F32, F64], 15)
    op("squeeze_dim", lambda x, k: x[0].squeeze(k["dim"]), s_dim_op(), [F32, F64])
    op("unsqueeze", lambda x, k: x[0].unsqueeze(k["dim"]), s_dim_op(extra=1), [F32, F64, I64])
    op("flatten", lambda x, k: x[0].flatten(k["start"], k["end"]), s_flatten, [F32, F64])
    op("unflatten", lambda x, k: x[0].unflatten(k["dim"], k["sizes"]), s_unflatten, [F32, F64])
    op("expand", lambda x, k: x[0].expand(k["shape"]), s_expand, [F32, F64, I64])
    op("broadcast_to", lambda x, k: torch.broadcast_to(x[0], k["shape"]), s_broadcast_to, [F32, F64])
    op("narrow", lambda x, k: x[0].narrow(k["dim"], k["start"], k["length"]), s_narrow, [F32, F64, I64])
    op("slice", lambda x, k: aten_slice(x[0], k["dim"], k["start"], k["end"], k["step"]), s_slice,
       [F32, F64, BOOL])
    op("select", lambda x, k: x[0].select(k["dim"], k["index"]), s_select, [F32, F64, I64])
    op("chunk", lambda x, k: torch.chunk(x[0], k["chunks"], k["dim"]), s_chunk, [F32, F64])
    op("split", lambda x, k: torch.split(x[0], k["size"], k["dim"]), s_split, [F32, F64])
    op("split_sizes", lambda x, k: torch.split(x[0], k["sizes"], k["dim"]), s_split_sizes, [F32, F64])
    op("contiguous_copy", lambda x, k: x[0].clone(), s_plain(), ALL, 15)
    for dt in ALL:
        op(f"to_dtype_{SHORT[dt]}", lambda x, k, dt=dt: x[0].to(dt), s_plain("cast0"), ALL, 12)

    # ---- binary arithmetic
    for name in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]:
        op(name, lambda x, k, f=getattr(torch, name): f(x[0], x[1]), s_binary,
           NO_BOOL if name in ("sub", "pow") else ALL, 40, edge=name in ("pow", "div"))
    scalar_fns = {
        "add_scalar": lambda x, v: x + v, "sub_scalar": lambda x, v: x - v, "rsub_scalar": lambda x, v: v - x,
        "mul_scalar": lambda x, v: x * v, "div_scalar": lambda x, v: x / v, "rdiv_scalar": lambda x, v: v / x,
        "pow_scalar": lambda x, v: x ** v, "rpow_scalar": lambda x, v: v ** x,
    }
    for name, f in scalar_fns.items():
        op(name, lambda x, k, f=f: f(x[0], k["value"]), s_scalar,
           [F32, F64, F16, BF16, I64] if name == "rpow_scalar" else NO_BOOL, 25,
           edge=name in ("pow_scalar", "rpow_scalar"))

    # ---- comparisons, logical, where
    for name in ["lt", "le", "gt", "ge", "eq", "ne"]:
        f = getattr(torch, name)
        op(name, lambda x, k, f=f: f(x[0], x[1]), s_binary, ALL, 30)
        op(f"{name}_scalar", lambda x, k, f=f: f(x[0], k["value"]), s_scalar, ALL, 20)
    for name in ["logical_and", "logical_or", "logical_xor"]:
        op(name, lambda x, k, f=getattr(torch, name): f(x[0], x[1]), s_binary, ALL, 30)
    op("logical_not", lambda x, k: torch.logical_not(x[0]), s_plain("grid"), ALL, 15)
    op("where", lambda x, k: torch.where(x[0], x[1], x[2]), s_where, ALL, 35)
    op("masked_fill", lambda x, k: x[0].masked_fill(x[1], k["value"]), s_masked_fill, ALL, 30)

    # ---- reductions
    op("sum", lambda x, k: torch.sum(x[0], tdims(k["dims"]), keepdim=k["keepdim"]), s_reduce_dims, ALL, 35)
    op("sum_all", lambda x, k: torch.sum(x[0]), s_reduce_all, ALL, 15)
    op("mean", lambda x, k: torch.mean(x[0], tdims(k["dims"]), keepdim=k["keepdim"]), s_reduce_dims, FLOATS, 30)
    op("mean_all", lambda x, k: torch.mean(x[0]), s_reduce_all, FLOATS, 15)
    op("prod", lambda x, k: prod_dims(x[0], k["dims"], k["keepdim"]), s_reduce_dims, UNARY_DT, 30)
    op("max_all", lambda x, k: torch.max(x[0]), s_reduce_all, RED_DT, 20, edge=True)
    op("min_all", lambda x, k: torch.min(x[0]), s_reduce_all, RED_DT, 20, edge=True)
    op("amax", lambda x, k: torch.amax(x[0], k["dims"], k["keepdim"]), s_reduce_dims, RED_DT, 30, edge=True)
    op("amin", lambda x, k: torch.amin(x[0], k["dims"], k["keepdim"]), s_reduce_dims, RED_DT, 30, edge=True)
    op("max_dim", lambda x, k: torch.max(x[0], k["dim"], k["keepdim"]), s_reduce_dim, UNARY_DT, 25)
    op("min_dim", lambda x, k: torch.min(x[0], k["dim"], k["keepdim"]), s_reduce_dim, UNARY_DT, 25)
    op("argmax", lambda x, k: torch.argmax(x[0], k["dim"], k["keepdim"]),
       lambda c: s_reduce_dim(c, nullable=True), UNARY_DT, 25)
    op("argmin", lambda x, k: torch.argmin(x[0], k["dim"], k["keepdim"]),
       lambda c: s_reduce_dim(c, nullable=True), UNARY_DT, 25)
    for name in ["var", "std"]:
        op(name, lambda x, k, f=getattr(torch, name): f(x[0], tdims(k["dims"]), correction=k["correction"],
                                                      keepdim=k["keepdim"]), s_reduce_dims, FLOATS, 30, edge=True)
    op("logsumexp", lambda x, k: logsumexp(x[0], k["dims"], k["keepdim"]), s_reduce_dims, FLOATS, 30, edge=True)
    op("norm", lambda x, k: torch.linalg.vector_norm(x[0], float(k["p"]), tdims(k["dims"]), k["keepdim"]),
       s_reduce_dims, FLOATS, 30, edge=True)
    op("all", lambda x, k: torch.all(x[0]), s_reduce_all, [BOOL, F32, I64], 15)
    op("any", lambda x, k: torch.any(x[0]), s_reduce_all, [BOOL, F32, I64], 15)
    op("all_dims", lambda x, k: torch.all(x[0], tdims(k["dims"]), k["keepdim"]), s_reduce_dims, [BOOL, F32])
    op("any_dims", lambda x, k: torch.any(x[0], tdims(k["dims"]), k["keepdim"]), s_reduce_dims, [BOOL, F32])
    op("cumsum", lambda x, k: torch.cumsum(x[0], k["dim"]), s_reduce_dim, [F16, BF16, F32, F64, I64, BOOL])
    op("cumprod", lambda x, k: torch.cumprod(x[0], k["dim"]), s_reduce_dim, UNARY_DT)
    op("softmax", lambda x, k: torch.softmax(x[0], k["dim"]), s_reduce_dim, FLOATS, 25, edge=True)
    op("log_softmax", lambda x, k: torch.log_softmax(x[0], k["dim"]), s_reduce_dim, FLOATS, 25, edge=True)

    # ---- unary
    plain_unary = {
        "neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "exp": torch.exp, "log": torch.log,
        "log2": torch.log2, "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
        "square": torch.square, "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos,
        "tan": torch.tan, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu,
    }
    for name, f in plain_unary.items():
        op(name, lambda x, k, f=f: f(x[0]), s_unary, UNARY_DT, 20, edge=name in UNARY_EDGE)
    op("leaky_relu", lambda x, k: F.leaky_relu(x[0], k["slope"]), s_unary, FLOATS, 20, edge=True)
    op("elu", lambda x, k: F.elu(x[0], k["alpha"]), s_unary, FLOATS, 20, edge=True)
    op("gelu", lambda x, k: F.gelu(x[0]), s_unary, FLOATS, 20)
    op("gelu_tanh", lambda x, k: F.gelu(x[0], approximate="tanh"), s_unary, FLOATS, 20)
    op("silu", lambda x, k: F.silu(x[0]), s_unary, FLOATS, 20)
    op("softplus", lambda x, k: F.softplus(x[0], k["beta"], k["threshold"]), s_unary, FLOATS, 20)
    op("erf", lambda x, k: torch.erf(x[0]), s_unary, UNARY_DT, 20)
    for name in ["floor", "ceil", "round"]:
        op(name, lambda x, k, f=getattr(torch, name): f(x[0]), s_unary, UNARY_DT, 20, edge=True)
    op("clamp", lambda x, k: torch.clamp(x[0], k["min"], k["max"]), s_clamp, UNARY_DT, 30, edge=True)
    op("clamp_min", lambda x, k: torch.clamp_min(x[0], k["value"]), s_clamp_one, FLOATS, 20, edge=True)
    op("clamp_max", lambda x, k: torch.clamp_max(x[0], k["value"]), s_clamp_one, FLOATS, 20, edge=True)

    # ---- index and shape ops
    op("cat", lambda x, k: torch.cat(x, k["dim"]), s_cat, ALL, 30)
    op("stack", lambda x, k: torch.stack(x, k["dim"]), s_cat, ALL, 30)
    op("hstack", lambda x, k: torch.hstack(x), s_cat, [F32, F64], 20)
    op("vstack", lambda x, k: torch.vstack(x), s_cat, [F32, F64], 20)
    op("index_select", lambda x, k: torch.index_select(x[0], k["dim"], x[1]), s_index_select, ALL, 30)
    op("gather", lambda x, k: torch.gather(x[0], k["dim"], x[1]), s_gather, ALL, 30)
    op("scatter", lambda x, k: torch.scatter(x[0], k["dim"], x[1], x[2]), s_scatter, FI, 30)
    op("scatter_value", lambda x, k: torch.scatter(x[0], k["dim"], x[1], k["value"]), s_scatter, [F32, F64])
    op("scatter_add", lambda x, k: torch.scatter_add(x[0], k["dim"], x[1], x[2]), s_scatter, FI, 30)
    op("index_add", lambda x, k: torch.index_add(x[0], k["dim"], x[1], x[2]), s_scatter, FI, 30)
    op("masked_select", lambda x, k: torch.masked_select(x[0], x[1]), s_masked_select, ALL, 25)
    op("nonzero", lambda x, k: torch.nonzero(x[0]), s_plain("grid"), [F32, I64, BOOL], 15)
    op("topk", lambda x, k: torch.topk(x[0], k["k"], k["dim"], k["largest"], k["sorted"]), s_topk,
       UNARY_DT, 30)
    op("sort", lambda x, k: torch.sort(x[0], dim=k["dim"], descending=k["descending"]), s_sort, UNARY_DT)
    op("argsort", lambda x, k: torch.argsort(x[0], dim=k["dim"], descending=k["descending"]), s_sort, FI)
    op("flip", lambda x, k: torch.flip(x[0], k["dims"]), s_flip, ALL)
    op("roll", lambda x, k: torch.roll(x[0], k["shifts"], k["dims"]), s_roll, ALL)
    op("repeat", lambda x, k: x[0].repeat(k["repeats"]), s_repeat, ALL)
    op("repeat_interleave", lambda x, k: torch.repeat_interleave(x[0], k["repeats"], k["dim"]),
       s_repeat_interleave, FI)
    op("pad_constant", lambda x, k: F.pad(x[0], k["pads"], "constant", k["value"]), s_pad, [F32, F64])
    op("pad_reflect", lambda x, k: F.pad(x[0], k["pads"], "reflect"), s_pad, [F32, F64])
    op("pad_replicate", lambda x, k: F.pad(x[0], k["pads"], "replicate"), s_pad, [F32, F64])
    op("tril", lambda x, k: torch.tril(x[0], k["diagonal"]), s_tri, ALL)
    op("triu", lambda x, k: torch.triu(x[0], k["diagonal"]), s_tri, ALL)
    op("one_hot", lambda x, k: F.one_hot(x[0], k["num_classes"]), s_one_hot, [I64], 20)

    # ---- matmul
    op("matmul", lambda x, k: torch.matmul(x[0], x[1]), s_matmul, UNARY_DT, 35)
    for name in ["mm", "bmm", "outer", "dot"]:
        op(name, lambda x, k, f=getattr(torch, name): f(x[0], x[1]), s_mm_fixed, UNARY_DT)

    # ---- in-place (run on recipe(base.clone()), no gradients)
    for name in ["add_", "sub_", "mul_", "div_", "copy_"]:
        op(name, lambda x, k, m=name: getattr(x[0], m)(x[1]), s_inplace_binary,
           {"div_": [F32, F64], "copy_": [F32, F64, I64, BOOL]}.get(name, FI))
    op("add_scalar_", lambda x, k: x[0].add_(k["value"]), s_inplace_unary, [F32, F64], 20)
    op("mul_scalar_", lambda x, k: x[0].mul_(k["value"]), s_inplace_unary, [F32, F64], 20)
    op("zero_", lambda x, k: x[0].zero_(), s_inplace_unary, [F32, I64], 15)
    op("fill_", lambda x, k: x[0].fill_(k["value"]), s_inplace_unary, [F32, F64], 20)
    op("clamp_", lambda x, k: x[0].clamp_(k["min"], k["max"]), s_clamp_inplace, [F32, F64], 20)

    # ---- attention
    op("sdpa", lambda x, k: sdpa(x[0], x[1], x[2], is_causal=k["is_causal"], scale=k["scale"]), s_sdpa,
       FLOATS, 30)
    op("sdpa_bool_mask", lambda x, k: sdpa(x[0], x[1], x[2], attn_mask=x[3]), s_sdpa, [F32, F64])
    op("sdpa_float_mask", lambda x, k: sdpa(x[0], x[1], x[2], attn_mask=x[3]), s_sdpa, [F32, F64], 25, edge=True)

    # ---- einsum and nn.functional ops
    op("einsum", lambda x, k: torch.einsum(k["equation"], *x), s_einsum, UNARY_DT, 40)
    op("diagonal", lambda x, k: torch.diagonal(x[0], k["offset"], k["dim1"], k["dim2"]), s_diagonal,
       [F32, F64, I64, BOOL])
    op("max_pool1d", lambda x, k: F.max_pool1d(x[0], k["kernel_size"], k["stride"], k["padding"], k["dilation"],
                                               k["ceil_mode"]), s_pool1d, FLOATS, 30)
    op("avg_pool1d", lambda x, k: F.avg_pool1d(x[0], k["kernel_size"], k["stride"], k["padding"],
                                               count_include_pad=k["count_include_pad"]), s_pool1d, [F32, F64])
    op("adaptive_max_pool2d", lambda x, k: F.adaptive_max_pool2d(x[0], k["output_size"]), s_adaptive_max_pool2d,
       FLOATS)
    op("pixel_shuffle", lambda x, k: F.pixel_shuffle(x[0], k["upscale_factor"]), s_pixel_shuffle, ALL)
    op("pixel_unshuffle", lambda x, k: F.pixel_unshuffle(x[0], k["downscale_factor"]), s_pixel_shuffle, ALL)
    op("interpolate", lambda x, k: interpolate(x[0], k), s_interpolate, FLOATS, 40)


# ================================================================ running a case
def first_line(e):
    """Torch's message, first line, without the characters the Rust JSON reader can't unescape."""
    msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
    msg = msg.replace('"', "'").replace("\\", "/")
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in msg)[:160]


def forward(od, bases, recipes, kw, grad):
    """Run the op on recipe(base) (in-place ops on a clone). Returns (leaves, outputs)."""
    if od.inplace:
        leaves = [b.clone() for b in bases]
    else:
        leaves = [b.clone().requires_grad_(grad and b.dtype.is_floating_point) for b in bases]
    xs = [apply_recipe(leaf, rc) for leaf, rc in zip(leaves, recipes)]
    return leaves, as_list(od.fn(xs, kw))


def backward(leaves, outs, gouts):
    """PyTorch's gradients as gen_fixtures.add_case computes them. `gouts` maps output index
    to upstream gradient, or is a function making one. Returns (gouts, grads, no_grad_reason)."""
    diff_in = [i for i, x in enumerate(leaves) if x.requires_grad]
    diff_out = [i for i, o in enumerate(outs) if o.requires_grad]
    if not diff_in or not diff_out:
        return {}, {}, None
    if callable(gouts):
        gouts = {i: gouts(outs[i]) for i in diff_out}
    try:
        grads = torch.autograd.grad([outs[i] for i in diff_out], [leaves[i] for i in diff_in],
                                    [gouts[i] for i in diff_out], allow_unused=True)
    except Exception as e:  # noqa: BLE001  (any refusal of torch's backward)
        return {}, {}, "backward raised: " + first_line(e)
    grads = {i: dense(torch.zeros_like(leaves[i]) if gr is None else gr) for i, gr in zip(diff_in, grads)}
    return gouts, grads, None


@dataclass
class Result:
    op: str
    name: str
    bases: list
    recipes: list
    kwargs: dict
    error: Optional[str] = None
    outs: list = field(default_factory=list)
    gouts: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    no_grad_reason: Optional[str] = None
    spec: Optional[Spec] = None
    edge: bool = False
    bad: bool = False  # mutated to be invalid


def run_case(od, bases, recipes, kw, g):
    """Run a case the way it is stored: forward with float leaves requiring grad, then the
    gradients; a forward that only fails with grad enabled is retried without."""
    res = Result(od.name, "", bases, recipes, kw)
    try:
        leaves, outs = forward(od, bases, recipes, kw, grad=not od.inplace)
    except Exception:  # noqa: BLE001
        try:
            leaves, outs = forward(od, bases, recipes, kw, grad=False)
            res.no_grad_reason = "forward with requires_grad raised"
        except Exception as e:  # noqa: BLE001
            res.error = first_line(e)
            return res
    res.outs = [dense(o) for o in outs]
    if not od.inplace and res.no_grad_reason is None:
        res.gouts, res.grads, res.no_grad_reason = backward(
            leaves, outs, lambda o: values(o.shape, o.dtype, "any", g))
    return res


def case_plan(od):
    """[(dtype, forced edge case)] per case: every dtype once, the other cases mostly in the
    op's own dtypes; for ops with singular points, EDGE_MIN float cases aim at them."""
    r = random.Random(seed_of(od.name))
    dts = list(ALL)
    dts += [r.choice(od.native) if r.random() < 0.85 else r.choice(ALL) for _ in range(od.n - len(ALL))]
    r.shuffle(dts)
    floats = [i for i, d in enumerate(dts) if d.is_floating_point]
    forced = set(r.sample(floats, min(EDGE_MIN, len(floats)))) if od.edge else set()
    return [(d, i in forced) for i, d in enumerate(dts)]


def gen_case(od, i, dt, force_edge=False):
    stem = f"{od.name}__r{i:03d}"
    seed = seed_of(stem)
    r, g = random.Random(seed), torch.Generator().manual_seed(seed)
    bad = r.random() < P_BAD and not force_edge
    edge = od.edge and not bad and dt.is_floating_point and (force_edge or r.random() < P_EDGE)
    for _ in range(100):
        c = Ctx(od.name, r, g, dt, bad, edge)
        try:
            spec = od.sample(c)
        except Retry:
            continue
        recipes, bases = [], []
        for j, inp in enumerate(spec.inputs):
            expand = inp.expand
            if (od.inplace and j == 0 or inp.values is not None) and expand == "ok":
                expand = "no"  # an expanded in-place target is refused (only where asked for)
            recipe, base_shape = choose_recipe(r, inp.shape, expand)
            target = inp.values if inp.values is not None else values(inp.shape, inp.dtype, inp.domain, g)
            if any(st[0] == "expand" for st in recipe):
                base = values(base_shape, inp.dtype, inp.domain, g)  # the values live in the base
            elif recipe:  # the view shows `target`; the rest of the base is filler
                base = values(base_shape, inp.dtype, "any" if inp.values is not None else inp.domain, g)
                apply_recipe(base, recipe).copy_(target)
            else:
                base = target
            recipes.append(recipe)
            bases.append(dense(base))
        res = run_case(od, bases, recipes, spec.kwargs, g)
        stored = bases + res.outs + list(res.gouts.values()) + list(res.grads.values())
        if any(t.numel() > MAX_NUMEL for t in stored):
            continue
        main = spec.inputs[1] if od.name == "where" else spec.inputs[0] if spec.inputs else None
        res.name = f"{stem}__{SHORT[main.dtype if main else dt]}"
        res.spec, res.edge, res.bad = spec, edge, bad and c.bad_read
        return res
    raise RuntimeError(f"{stem}: no case within the size limits")


def store(res, tensors, meta):
    name = res.name
    for i, b in enumerate(res.bases):
        tensors[f"{name}.in{i}"] = b
    for i, o in enumerate(res.outs):
        tensors[f"{name}.out" + (str(i) if i else "")] = o
    for i, go in res.gouts.items():
        tensors[f"{name}.gout" + (str(i) if i else "")] = go
    for i, gr in res.grads.items():
        tensors[f"{name}.grad{i}"] = gr
    m = {"op": res.op, "kwargs": res.kwargs, "views": res.recipes, "expect": "error" if res.error else "ok"}
    if res.error:
        m["error"] = res.error
    if res.no_grad_reason:
        m["no_grad_reason"] = res.no_grad_reason
    meta[name] = json.dumps(m, separators=(",", ":"), sort_keys=True)


def table_names():
    """The op names of ops.rs' table (every `op!("name", ...)` record)."""
    with open(OPS_RS) as f:
        return re.findall(r'op!\(\s*"([a-z0-9_]+)"', f.read())


# ================================================================ summary and check
def summary(results, path):
    ok = [x for x in results if not x.error]
    print(f"torch {torch.__version__}")
    print(f"{len(results)} cases: {len(ok)} ok, {len(results) - len(ok)} error "
          f"({sum(x.bad for x in results)} mutated to be invalid, of which PyTorch accepted "
          f"{sum(x.bad and not x.error for x in results)}; {sum(not x.bad and bool(x.error) for x in results)} "
          f"errors from the dtype alone)")
    per_op = Counter(x.op for x in results)
    err_op = Counter(x.op for x in results if x.error)
    print("cases per op (total/error):")
    names = list(OPS)
    for i in range(0, len(names), 6):
        print("  " + "  ".join(f"{n}={per_op[n]}/{err_op[n]}" for n in names[i:i + 6]))
    views = Counter()
    chains = 0
    for x in results:
        for rc in x.recipes:
            views.update(st[0] for st in rc)
            chains += len(rc) >= 2

    def viewed(x):
        return [apply_recipe(b, rc) for b, rc in zip(x.bases, x.recipes)]
    empty = sum(any(v.numel() == 0 for v in viewed(x)) or any(o.numel() == 0 for o in x.outs) for x in results)
    empty_off = sum(any(v.numel() == 0 and v.storage_offset() > 0 for v in viewed(x)) for x in results)
    zero_d = sum(any(v.dim() == 0 for v in viewed(x)) for x in results)
    mixed = sum(x.spec.mixed and len({b.dtype for b in x.bases}) > 1 for x in results)
    dts = Counter(x.name.rsplit("__", 1)[1] for x in results)
    print(f"cases with an empty tensor (input view or output): {empty}; with an empty input view at a "
          f"non-zero storage offset: {empty_off}")
    print(f"cases with a 0-d input: {zero_d}")
    print(f"view steps: {dict(sorted(views.items()))}; inputs with a chain of two: {chains}; "
          f"cases with a view: {sum(any(x.recipes) for x in results)}")
    print(f"cases with mixed operand dtypes: {mixed}")
    print(f"edge cases: {sum(x.edge for x in results)}; with gradients: {sum(bool(x.grads) for x in results)}; "
          f"with a no_grad_reason: {sum(bool(x.no_grad_reason) for x in results)}")
    print(f"main dtypes: {dict(sorted(dts.items()))}")
    print(f"file: {os.path.normpath(path)}, {os.path.getsize(path)} bytes")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    st_dtype = {v: k for k, v in ST_DTYPE.items()}
    tensors = {}
    for name, h in header.items():
        dt = st_dtype[h["dtype"]]
        a, b = h["data_offsets"]
        raw = bytearray(data[8 + n + a: 8 + n + b])
        tensors[name] = torch.frombuffer(raw, dtype=torch.uint8).view(dt).reshape(h["shape"]) if raw else \
            torch.zeros(h["shape"], dtype=dt)
    return tensors, meta


def same(a, b):
    """Bit-identical (so NaN payloads, -0.0 and the dtype count)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(dense(a).reshape(-1).view(torch.uint8), dense(b).reshape(-1).view(torch.uint8))


def check(path):
    """Replay every case of `path` against torch; True when all of them agree."""
    tensors, meta = read_safetensors(path)
    missing = set(table_names()) - {json.loads(m)["op"] for m in meta.values()}
    assert not missing, f"ops of the table without cases: {sorted(missing)}"
    failures = 0
    for name, js in sorted(meta.items()):
        m = json.loads(js)
        od = OPS[m["op"]]
        bases = []
        while f"{name}.in{len(bases)}" in tensors:
            bases.append(tensors[f"{name}.in{len(bases)}"])
        key = lambda stem, i: f"{name}.{stem}" + (str(i) if i else "")  # noqa: E731
        try:
            assert len(bases) == len(m["views"]), "one recipe per input"
            if m["expect"] == "error":
                try:
                    forward(od, bases, m["views"], m["kwargs"], grad=False)
                except Exception:  # noqa: BLE001
                    continue
                raise AssertionError("PyTorch no longer raises")
            leaves, outs = forward(od, bases, m["views"], m["kwargs"], grad="no_grad_reason" not in m)
            nout = 0
            while key("out", nout) in tensors:
                nout += 1
            assert nout == len(outs), f"{len(outs)} outputs, {nout} stored"
            for i, o in enumerate(outs):
                assert same(o.detach(), tensors[key("out", i)]), f"output {i} differs"
            gouts = {i: tensors[key("gout", i)] for i in range(len(outs)) if key("gout", i) in tensors}
            stored = {i for i in range(len(bases)) if f"{name}.grad{i}" in tensors}
            if gouts or stored:
                _, grads, why = backward(leaves, outs, gouts)
                assert why is None, why
                assert stored == set(grads), f"gradients for {sorted(grads)}, stored {sorted(stored)}"
                for i, gr in grads.items():
                    assert same(gr, tensors[f"{name}.grad{i}"]), f"gradient {i} differs"
        except AssertionError as e:
            failures += 1
            print(f"FAIL {name}: {e}")
    print(f"checked {len(meta)} cases, {failures} failures")
    return failures == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="replay the written file against torch")
    ap.add_argument("--out", default=OUT, help="the fixture file (default: %(default)s)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # reductions are then deterministic, whatever the machine
    warnings.filterwarnings("ignore")  # deprecations (uint8 conditions), var with dof <= 0, ...
    register()
    if args.check:
        sys.exit(0 if check(args.out) else 1)
    names = table_names()
    missing, extra = set(names) - set(OPS), set(OPS) - set(names)
    assert not missing, f"ops of ops.rs without a sampler: {sorted(missing)}"
    if extra:
        print(f"note: samplers for ops not in ops.rs: {sorted(extra)}")
    results, tensors, meta = [], {}, {}
    for od in OPS.values():
        for i, (dt, force_edge) in enumerate(case_plan(od)):
            res = gen_case(od, i, dt, force_edge)
            results.append(res)
            store(res, tensors, meta)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_safetensors(args.out, tensors, meta)
    summary(results, args.out)


if __name__ == "__main__":
    main()
