#!/usr/bin/env python3
"""Why the CPU's bf16 convolutions do not run Winograd's products in bf16: the error of a
Winograd tile whose transformed kernel U = G w G^T and input V = B^T d B are rounded to bf16
(the operands a bf16 dot-product engine would take), against a bf16 convolution computed as
TinyTorch and PyTorch's CPU kernels compute it (exact products, f32 sums, the output rounded
to bf16 once).

The transform matrices are built as `backend/cpu/conv/winograd.rs` builds them (Toom-Cook on
the same points and infinity). Inputs and weights are bf16 values (standard normal, weights
scaled by 0.1); each tile sums `ci` input channels. Errors are relative to the reference
(f64) output: the largest absolute error over the largest |output|, and the root mean square.
The cost column is the multiplications per output of each way, in f32 FMA time (a bf16 dot
product does two multiply-adds in an f32 FMA's time), relative to the f32 F(4x4, r x r) path
that runs today.

Usage: python scripts/bench/winograd_bf16_error.py   (needs numpy)
"""
import numpy as np

POINTS = {6: [0, 1, -1, 0.5, -2], 8: [0, 1, -1, 0.5, -0.5, 2, -2], 4: [0, 1, -1]}


def evaluation(alpha, n):
    """The (alpha, n) matrix evaluating a polynomial of n coefficients at the points, the
    last row (infinity) picking the leading coefficient."""
    e = np.zeros((alpha, n))
    for j, p in enumerate(POINTS[alpha]):
        e[j] = [p**i for i in range(n)]
    e[alpha - 1, n - 1] = 1
    return e


def matrices(m, r):
    alpha = m + r - 1
    bt = np.linalg.inv(evaluation(alpha, alpha)).T
    return evaluation(alpha, m).T, evaluation(alpha, r), bt


def to_bf16(x):
    """Round to the nearest bf16 (ties to even), returned as f64."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def to_f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def main():
    rng = np.random.default_rng(0)
    print("| tile | channels | bf16 U, V: max / rms error | bf16 direct: max / rms error"
          " | cost vs f32 Winograd |")
    print("|---|---:|---:|---:|---:|")
    for m, r, ci in [(2, 3, 64), (4, 3, 64), (2, 5, 48), (4, 5, 48)]:
        at, g, bt = matrices(m, r)
        alpha = m + r - 1
        tiles = 400
        d = to_bf16(rng.standard_normal((tiles, ci, alpha, alpha)))
        w = to_bf16(rng.standard_normal((ci, r, r)) * 0.1)
        ref = np.zeros((tiles, m, m))
        for i in range(m):
            for j in range(m):
                ref[:, i, j] = np.einsum("tckl,ckl->t", d[:, :, i:i + r, j:j + r], w)
        u = np.einsum("ik,ckl,jl->cij", g, w, g)
        v = np.einsum("ik,tckl,jl->tcij", bt, d, bt)
        prod = to_f32(np.einsum("cij,tcij->tij", to_bf16(u), to_bf16(v)))
        wino = np.einsum("ik,tkl,jl->tij", at, prod, at)
        direct = to_bf16(ref)
        scale, rms = np.abs(ref).max(), np.sqrt(np.mean(ref**2))

        def errs(y):
            return np.abs(y - ref).max() / scale, np.sqrt(np.mean((y - ref) ** 2)) / rms

        we, wr = errs(wino)
        de, dr = errs(direct)
        # f32 F(4, r): alpha4^2 / 16 multiplications per output; bf16: half that time.
        f32_cost = (4 + r - 1) ** 2 / 16
        cost = alpha**2 / (m * m) / 2 / f32_cost
        print(f"| F({m}x{m}, {r}x{r}) | {ci} | {we:.1e} / {wr:.1e} | {de:.1e} / {dr:.1e}"
              f" | {cost:.2f} |")
    direct_cost = {3: 9 / 2 / (36 / 16), 5: 25 / 2 / (64 / 16)}
    for r, c in direct_cost.items():
        print(f"bf16 direct {r}x{r} (dot products) against f32 F(4x4, {r}x{r}): {c:.2f}x the time")


if __name__ == "__main__":
    main()
