//! Vectorisable f32 math for hot loops. `f32::exp` calls libm once per element, which LLVM
//! cannot vectorise; `exp_f32` is branch-free arithmetic that it can, accurate to about 2 ulp.
//! Tests compare both with the std functions.
//!
//! The slice kernels write into uninitialised output (`MaybeUninit`): zero-filling a fresh
//! buffer first is a pass over memory as long as the op itself.

use std::mem::MaybeUninit;

/// e^x for f32, accurate to ~2 ulp on the normal range; 0 below -87.3 (where e^x would be
/// subnormal) and +inf above 88.72.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that k * LN2_HI is exact.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a branch.
    const ROUND: f32 = 12_582_912.0;
    // Plain comparisons rather than `clamp`/`as i32`, whose NaN and saturation rules force
    // scalar code.
    let lo = if x < -87.3 { -87.3 } else { x };
    let xc = if lo > 88.72 { 88.72 } else { lo };
    let kr = xc * LOG2E + ROUND;
    let k = kr - ROUND;
    let r = xc - k * LN2_HI - k * LN2_LO;
    // Taylor polynomial of e^r on |r| <= ln(2)/2; the r^7 term is below 2^-24 relative.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // kr's bits are ROUND's plus k, so 2^k's exponent field is (bits - ROUND's bits + 127).
    let scale = f32::from_bits(kr.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23);
    let y = p * scale;
    // NaN passes through the clamp unchanged and stays NaN in the arithmetic above.
    if x < -87.3 {
        0.0
    } else if x > 88.72 {
        f32::INFINITY
    } else {
        y
    }
}

/// [`exp_f32`] with fused multiply-adds: the same range reduction and polynomial, rounded
/// once per step instead of twice, in about a third fewer instructions (measured: the
/// AVX-512 `exp` loop 1.45x faster). Without an FMA unit `mul_add` is a slow libm call,
/// which is why `fast_math`'s portable version keeps separate multiplies and adds; this
/// one runs only in the loops compiled for AVX2/AVX-512 with FMA.
#[inline(always)]
pub fn exp_f32_fma(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so that k * LN2_HI is exact.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a branch.
    const ROUND: f32 = 12_582_912.0;
    let lo = if x < -87.3 { -87.3 } else { x };
    let xc = if lo > 88.72 { 88.72 } else { lo };
    let kr = xc.mul_add(LOG2E, ROUND);
    let k = kr - ROUND;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, xc));
    // Taylor polynomial of e^r on |r| <= ln(2)/2, in Horner form.
    let p = r.mul_add(1.0 / 720.0, 1.0 / 120.0);
    let p = r.mul_add(p, 1.0 / 24.0);
    let p = r.mul_add(p, 1.0 / 6.0);
    let p = r.mul_add(p, 0.5);
    let p = r.mul_add(p, 1.0);
    let p = r.mul_add(p, 1.0);
    // kr's bits are ROUND's plus k, so 2^k's exponent field is (bits - ROUND's bits + 127).
    let scale = f32::from_bits(kr.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23);
    let y = p * scale;
    // NaN passes through the clamp unchanged and stays NaN in the arithmetic above.
    if x < -87.3 {
        0.0
    } else if x > 88.72 {
        f32::INFINITY
    } else {
        y
    }
}

/// erf for f32 by Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7, 4.2e-7 with f32
/// rounding), the formula
/// PyTorch's vectorised CPU `erf` (and so its f32 GELU) uses; branch-free so that it
/// vectorises, where libm's `erff` is a scalar call per element.
#[cfg(test)]
fn erf_f32(x: f32) -> f32 {
    erf_with_gaussian::<false>(x, exp_f32(-x * x))
}

/// `a * b + c`, fused (one rounding) in the copies compiled for CPUs with FMA.
#[inline(always)]
fn mul_add<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// [`exp_f32`], or [`exp_f32_fma`] with `FMA`.
#[inline(always)]
fn exp_with<const FMA: bool>(x: f32) -> f32 {
    if FMA {
        exp_f32_fma(x)
    } else {
        exp_f32(x)
    }
}

/// [`erf_f32`] given `e = exp(-x^2)`, for callers that need that Gaussian themselves.
#[inline(always)]
fn erf_with_gaussian<const FMA: bool>(x: f32, e: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_8,
        -1.453_152,
        1.061_405_4,
    ];
    let t = 1.0 / mul_add::<FMA>(P, x.abs(), 1.0);
    let poly = mul_add::<FMA>(A[4], t, A[3]);
    let poly = mul_add::<FMA>(poly, t, A[2]);
    let poly = mul_add::<FMA>(poly, t, A[1]);
    let poly = mul_add::<FMA>(poly, t, A[0]) * t;
    mul_add::<FMA>(-poly, e, 1.0).copysign(x)
}

/// `1 / sqrt(2)`.
const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// `1 / sqrt(2 pi)`, the scale of the standard normal density.
const INV_SQRT_2PI: f32 = 0.398_942_3;

/// Exact GELU `x * Phi(x)` in f32 with [`erf_f32`].
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    gelu_with::<false>(x)
}

/// GELU's derivative `Phi(x) + x * phi(x)` in f32.
#[inline(always)]
pub fn gelu_grad_f32(x: f32) -> f32 {
    gelu_grad_with::<false>(x)
}

/// [`gelu_f32`], with fused multiply-adds where `FMA` (the slice kernels compiled for CPUs
/// that have them): on an Intel Xeon the small GPT's GELU forward took 1.60 ms of a
/// single-thread step instead of 2.02, its in-place backward 1.77 instead of 2.44 (`perf`).
#[inline(always)]
fn gelu_with<const FMA: bool>(x: f32) -> f32 {
    let z = x * FRAC_1_SQRT_2;
    let erf = erf_with_gaussian::<FMA>(z, exp_with::<FMA>(-z * z));
    0.5 * x * (1.0 + erf)
}

/// [`gelu_grad_f32`], with fused multiply-adds where `FMA`.
#[inline(always)]
fn gelu_grad_with<const FMA: bool>(x: f32) -> f32 {
    // One exponential serves both terms: erf(x / sqrt 2) needs exp(-x^2 / 2) too.
    let e = exp_with::<FMA>(-0.5 * x * x);
    let cdf = 0.5 * (1.0 + erf_with_gaussian::<FMA>(x * FRAC_1_SQRT_2, e));
    mul_add::<FMA>(x * INV_SQRT_2PI, e, cdf)
}

/// True when the CPU has AVX2 and FMA, the features of the `*_avx2` copies of the CPU
/// kernels (the baseline x86-64 target only allows 4-wide SSE).
#[cfg(target_arch = "x86_64")]
pub fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// True when the CPU has AVX-512 (F and VL) besides AVX2 and FMA: the features of the
/// `*_avx512` copies of the CPU kernels (GELU here, cross-entropy, the direct convolution).
#[cfg(target_arch = "x86_64")]
pub fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && has_avx2_fma()
}

/// GELU `out = gelu(x)` over contiguous f32 slices of one length, in the widest vector
/// unit the CPU has (the baseline x86-64 target only allows 4-wide SSE).
pub fn gelu_forward_f32(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (both): the CPU has the features the copies are compiled for.
        if has_avx512() {
            return unsafe { wide::gelu_forward_avx512(x, out) };
        }
        if has_avx2_fma() {
            return unsafe { wide::gelu_forward_avx2(x, out) };
        }
    }
    gelu_forward_f32_portable::<false>(x, out)
}

/// GELU's backward `out = g * gelu'(x)` over contiguous f32 slices of one length, in the
/// widest vector unit the CPU has.
pub fn gelu_backward_f32(g: &[f32], x: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (both): the CPU has the features the copies are compiled for.
        if has_avx512() {
            return unsafe { wide::gelu_backward_avx512(g, x, out) };
        }
        if has_avx2_fma() {
            return unsafe { wide::gelu_backward_avx2(g, x, out) };
        }
    }
    gelu_backward_f32_portable::<false>(g, x, out)
}

/// GELU's backward in place: `g = g * gelu'(x)` over contiguous f32 slices of one length
/// (the upstream gradient's buffer becomes the input's gradient: no fresh buffer to fill).
pub fn gelu_backward_f32_inplace(g: &mut [f32], x: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY (both): the CPU has the features the copies are compiled for.
        if has_avx512() {
            return unsafe { wide::gelu_backward_inplace_avx512(g, x) };
        }
        if has_avx2_fma() {
            return unsafe { wide::gelu_backward_inplace_avx2(g, x) };
        }
    }
    gelu_backward_f32_inplace_portable::<false>(g, x)
}

/// The portable bodies compiled with wider vector instructions enabled.
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::{
        gelu_backward_f32_inplace_portable, gelu_backward_f32_portable, gelu_forward_f32_portable,
    };
    use std::mem::MaybeUninit;

    #[target_feature(enable = "avx512f,avx2,fma")]
    pub unsafe fn gelu_forward_avx512(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        gelu_forward_f32_portable::<true>(x, out)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gelu_forward_avx2(x: &[f32], out: &mut [MaybeUninit<f32>]) {
        gelu_forward_f32_portable::<true>(x, out)
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    pub unsafe fn gelu_backward_avx512(g: &[f32], x: &[f32], out: &mut [MaybeUninit<f32>]) {
        gelu_backward_f32_portable::<true>(g, x, out)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gelu_backward_avx2(g: &[f32], x: &[f32], out: &mut [MaybeUninit<f32>]) {
        gelu_backward_f32_portable::<true>(g, x, out)
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    pub unsafe fn gelu_backward_inplace_avx512(g: &mut [f32], x: &[f32]) {
        gelu_backward_f32_inplace_portable::<true>(g, x)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gelu_backward_inplace_avx2(g: &mut [f32], x: &[f32]) {
        gelu_backward_f32_inplace_portable::<true>(g, x)
    }
}

#[inline(always)]
fn gelu_forward_f32_portable<const FMA: bool>(x: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (o, &x) in out.iter_mut().zip(x) {
        o.write(gelu_with::<FMA>(x));
    }
}

#[inline(always)]
fn gelu_backward_f32_portable<const FMA: bool>(g: &[f32], x: &[f32], out: &mut [MaybeUninit<f32>]) {
    for ((o, &g), &x) in out.iter_mut().zip(g).zip(x) {
        o.write(g * gelu_grad_with::<FMA>(x));
    }
}

#[inline(always)]
fn gelu_backward_f32_inplace_portable<const FMA: bool>(g: &mut [f32], x: &[f32]) {
    for (g, &x) in g.iter_mut().zip(x) {
        *g *= gelu_grad_with::<FMA>(x);
    }
}

/// Elements summed per block before the block's total is added in f64: keeps long rows
/// (vocabularies of 50k) accurate while the inner loop stays in vectorisable f32 lanes.
const BLOCK: usize = 1024;
const LANES: usize = 8;

/// Sum of a slice: 8 f32 lanes per block, blocks added in f64.
#[inline(always)]
fn sum_f32(v: &[f32]) -> f64 {
    let mut total = 0.0f64;
    for block in v.chunks(BLOCK) {
        let mut acc = [0.0f32; LANES];
        let chunks = block.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..LANES {
                acc[i] += c[i];
            }
        }
        total += acc.iter().map(|&a| a as f64).sum::<f64>()
            + rest.iter().map(|&a| a as f64).sum::<f64>();
    }
    total
}

/// Maximum of a slice in 8 lanes (NaN-blind: a NaN row still gives NaN outputs, because
/// `exp(NaN - max)` is NaN and poisons the sum).
#[inline(always)]
fn max_f32(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = v.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    rest.iter()
        .chain(acc.iter())
        .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m })
}

/// Softmax (or log-softmax) of one contiguous f32 row into `out`. Uses AVX2 when the CPU has
/// it (the baseline x86-64 target only allows 4-wide SSE).
pub fn softmax_row_f32(row: &[f32], out: &mut [f32], log: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { softmax_row_f32_avx2(row, out, log) };
    }
    softmax_row_f32_portable(row, out, log)
}

/// The portable body compiled with AVX2 enabled.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_row_f32_avx2(row: &[f32], out: &mut [f32], log: bool) {
    softmax_row_f32_portable(row, out, log)
}

#[inline(always)]
fn softmax_row_f32_portable(row: &[f32], out: &mut [f32], log: bool) {
    let max = max_f32(row);
    if log {
        for (o, &x) in out.iter_mut().zip(row) {
            *o = exp_f32(x - max);
        }
        let log_sum = sum_f32(out).ln() as f32;
        // (x - max) - log(sum), in this order: folding max and log(sum) into one shift first
        // would round it to the precision of the max (e.g. 1000.3 in f32).
        for (o, &x) in out.iter_mut().zip(row) {
            *o = (x - max) - log_sum;
        }
    } else {
        for (o, &x) in out.iter_mut().zip(row) {
            *o = exp_f32(x - max);
        }
        let inv = (1.0 / sum_f32(out)) as f32;
        for o in out.iter_mut() {
            *o *= inv;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `exp` agrees with f64's within about two ulp over f32's range, and handles the
    /// extremes (underflow to 0, overflow to inf, NaN, exp(0) = 1).
    pub(in crate::backend::cpu) fn assert_exp_accurate(exp: fn(f32) -> f32) {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (a, b) = (exp(x) as f64, (x as f64).exp());
            worst = worst.max(((a - b) / b).abs());
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(1000.0), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn exp_matches_f64_exp_within_about_two_ulp() {
        assert_exp_accurate(exp_f32);
    }

    #[test]
    fn erf_and_gelu_match_libm_within_abramowitz_stegun_error() {
        let (mut worst_erf, mut worst_gelu, mut worst_grad) = (0.0f64, 0.0f64, 0.0f64);
        let mut x = -12.0f32;
        while x < 12.0 {
            let xd = x as f64;
            let erf = libm::erf(xd);
            worst_erf = worst_erf.max((erf_f32(x) as f64 - erf).abs());
            let cdf = 0.5 * (1.0 + libm::erf(xd * std::f64::consts::FRAC_1_SQRT_2));
            let pdf = (-0.5 * xd * xd).exp() / (2.0 * std::f64::consts::PI).sqrt();
            // Both roundings: separate multiplies and adds, and fused.
            for (gelu, grad) in [
                (gelu_with::<false>(x), gelu_grad_with::<false>(x)),
                (gelu_with::<true>(x), gelu_grad_with::<true>(x)),
            ] {
                worst_gelu = worst_gelu.max((gelu as f64 - xd * cdf).abs() / (1.0 + xd.abs()));
                worst_grad = worst_grad.max((grad as f64 - (cdf + xd * pdf)).abs());
            }
            x += 0.00731;
        }
        // 1.5e-7 of the formula plus f32 rounding near |erf| = 1.
        assert!(worst_erf < 5e-7, "erf: worst absolute error {worst_erf:e}");
        assert!(worst_gelu < 5e-7, "gelu: worst error {worst_gelu:e}");
        assert!(
            worst_grad < 1e-6,
            "gelu grad: worst absolute error {worst_grad:e}"
        );
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert!(erf_f32(f32::NAN).is_nan() && gelu_f32(f32::NAN).is_nan());
        assert_eq!(gelu_f32(0.0), 0.0);
    }

    /// The GELU slice kernels (AVX-512 or AVX2 copies here, with fused multiply-adds)
    /// compute what the scalar functions of the same rounding compute, element for element,
    /// including the tails shorter than a vector and NaN.
    #[test]
    fn gelu_slice_kernels_match_the_scalar_functions() {
        #[cfg(target_arch = "x86_64")]
        let fma = has_avx2_fma();
        #[cfg(not(target_arch = "x86_64"))]
        let fma = false;
        let gelu = if fma {
            gelu_with::<true>
        } else {
            gelu_with::<false>
        };
        let grad = if fma {
            gelu_grad_with::<true>
        } else {
            gelu_grad_with::<false>
        };
        let x: Vec<f32> = (0..1037)
            .map(|i| (i as f32 * 0.377).sin() * 9.0)
            .chain([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0])
            .collect();
        let g: Vec<f32> = (0..x.len()).map(|i| (i as f32 * 0.91).cos()).collect();
        for n in [0, 1, 15, 17, x.len()] {
            let mut buf = vec![MaybeUninit::<f32>::uninit(); n];
            // SAFETY: each kernel call below writes every element before `out` is read.
            let out = |b: &[MaybeUninit<f32>]| -> Vec<f32> {
                b.iter().map(|v| unsafe { v.assume_init() }).collect()
            };
            gelu_forward_f32(&x[..n], &mut buf);
            for (o, &x) in out(&buf).iter().zip(&x) {
                assert_eq!(o.to_bits(), gelu(x).to_bits(), "gelu({x})");
            }
            gelu_backward_f32(&g[..n], &x[..n], &mut buf);
            for ((o, &g), &x) in out(&buf).iter().zip(&g).zip(&x) {
                assert_eq!(o.to_bits(), (g * grad(x)).to_bits(), "gelu'({x})");
            }
            let mut in_place = g[..n].to_vec();
            gelu_backward_f32_inplace(&mut in_place, &x[..n]);
            for (o, i) in out(&buf).iter().zip(&in_place) {
                assert_eq!(o.to_bits(), i.to_bits(), "in place");
            }
        }
    }

    #[test]
    fn softmax_row_matches_reference() {
        let row: Vec<f32> = (0..3001)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.3)
            .collect();
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
        let mut out = vec![0.0; row.len()];
        softmax_row_f32(&row, &mut out, false);
        for (o, &x) in out.iter().zip(&row) {
            let r = (x as f64 - max).exp() / sum;
            assert!((*o as f64 - r).abs() <= 1e-6 * r + 1e-12, "{o} vs {r}");
        }
        softmax_row_f32(&row, &mut out, true);
        for (o, &x) in out.iter().zip(&row) {
            let r = (x as f64 - max) - sum.ln();
            assert!((*o as f64 - r).abs() <= 1e-5, "{o} vs {r}");
        }
        let mut nan_out = vec![0.0; 3];
        softmax_row_f32(&[1.0, f32::NAN, 2.0], &mut nan_out, false);
        assert!(nan_out.iter().all(|v| v.is_nan()));
    }
}
