//! Activations in int8 layers: affine u8 parameters (from a batch's own range in dynamic
//! quantization, from calibration in static quantization), and quantizing rows of f32 values
//! into the padded u8 rows the int8 product reads.

use super::qparams::{QParams, QuantRange};
use crate::error::{Error, Result};
use crate::tensor::memory::CountedBytes;
use rayon::prelude::*;

/// Affine u8 parameters of an activation: `real = scale * (q - zero_point)`, `q` in
/// `[0, 255]` (PyTorch's `quint8`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    /// The step between two integers.
    pub scale: f32,
    /// The integer that stands for 0.
    pub zero_point: i32,
}

impl Affine {
    /// Parameters for values in `[lo, hi]` (widened to include 0), as PyTorch's
    /// `MinMaxObserver(dtype=torch.quint8)` computes them.
    pub fn from_range(lo: f32, hi: f32) -> Affine {
        let p = QParams::affine(&[lo], &[hi], QuantRange::uint8(), None);
        Affine {
            scale: p.scales[0],
            zero_point: p.zero_points[0],
        }
    }

    /// Stored parameters, checked: a positive finite scale and a zero point in `[0, 255]`.
    pub fn checked(op: &'static str, scale: f32, zero_point: i64) -> Result<Affine> {
        if !(scale.is_finite() && scale > 0.0 && (0..=255).contains(&zero_point)) {
            return Err(Error::invalid(
                op,
                format!("bad activation parameters: scale {scale}, zero point {zero_point}"),
            ));
        }
        Ok(Affine {
            scale,
            zero_point: zero_point as i32,
        })
    }

    /// Parameters for `values`' own range (dynamic quantization).
    pub fn of_values(values: &[f32]) -> Affine {
        let (lo, hi) = range_with_zero(values);
        Affine::from_range(lo, hi)
    }

    /// The integer `v` maps to: ATen's `quantize_val` (`zero_point + round_half_even(v / scale)`
    /// computed as `v * (1 / scale)` in f32), clamped to `[lo, 255]`. NaN maps to `lo`.
    #[inline]
    pub(super) fn quantize(self, v: f32, inv_scale: f32, lo: f32) -> u8 {
        // `max` first: it maps NaN to `lo`, so `t` is an integer in [lo, 255] (`clamp` would
        // keep a NaN).
        #[allow(clippy::manual_clamp)]
        let t = (round_half_even(v * inv_scale) + self.zero_point as f32)
            .max(lo)
            .min(255.0);
        // SAFETY: `t` is finite and in range for i32.
        (unsafe { t.to_int_unchecked::<i32>() }) as u8
    }
}

/// The smallest and largest of `values` and 0, in 16 lanes so that it vectorises.
fn range_with_zero(values: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([0.0f32; 16], [0.0f32; 16]);
    let chunks = values.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..16 {
            lo[i] = lo[i].min(c[i]);
            hi[i] = hi[i].max(c[i]);
        }
    }
    let fold = |a: &[f32], f: fn(f32, f32) -> f32| a.iter().copied().fold(0.0, f);
    let (lo, hi) = (fold(&lo, f32::min), fold(&hi, f32::max));
    (fold(rest, f32::min).min(lo), fold(rest, f32::max).max(hi))
}

/// `x` rounded to the nearest integer, ties to even, for `|x| < 2^22`: adding and removing
/// 1.5 * 2^23 leaves no fraction bits, and the FPU's default rounding is to nearest even.
/// Larger values are clamped by the callers anyway. (`f32::round_ties_even` is a libm call
/// on x86-64 without SSE4.1: ten times slower, and it was most of a small layer's time.)
#[inline]
pub(super) fn round_half_even(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    if x.abs() < 4_194_304.0 {
        (x + MAGIC) - MAGIC
    } else {
        x
    }
}

/// Elements a parallel task should at least get: below this, splitting costs more than it
/// saves.
pub(super) const MIN_TASK: usize = 1 << 14;

/// Quantize `values` (rows of `k`) with `act` into rows of `k` rounded up to a multiple of 4
/// (the padding bytes are 0; they meet zero weights), counted in the memory statistics while
/// the guard lives; the rows split over the threads when `parallel`.
pub(super) fn quantize_rows(
    values: &[f32],
    k: usize,
    act: Affine,
    parallel: bool,
) -> (Vec<u8>, CountedBytes) {
    let k4 = k.next_multiple_of(4);
    let rows = values.len() / k.max(1);
    let counted = CountedBytes::cpu(rows * k4);
    let mut out = vec![0u8; rows * k4];
    let inv = 1.0 / act.scale;
    let quantize_row = |(row, src): (&mut [u8], &[f32])| {
        for (q, &v) in row.iter_mut().zip(src) {
            *q = act.quantize(v, inv, 0.0);
        }
    };
    if parallel {
        out.par_chunks_mut(k4.max(1))
            .zip(values.par_chunks(k.max(1)))
            .with_min_len(MIN_TASK / k.max(1) + 1)
            .for_each(quantize_row);
    } else {
        out.chunks_mut(k4.max(1))
            .zip(values.chunks(k.max(1)))
            .for_each(quantize_row);
    }
    (out, counted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_rounding_is_half_to_even_everywhere() {
        for x in [0.5f32, 1.5, 2.5, -0.5, -1.5, 3.49, 1e7, -1e7, 4_194_303.5] {
            assert_eq!(round_half_even(x), x.round_ties_even(), "{x}");
        }
    }

    #[test]
    fn rows_are_padded_and_clamped() {
        let act = Affine::from_range(0.0, 2.55);
        assert_eq!(act.zero_point, 0);
        let (q, _) = quantize_rows(&[-5.0, 0.0, 5.0, f32::NAN, 1.0], 5, act, true);
        assert_eq!(q.len(), 8);
        assert_eq!(&q[..5], &[0, 0, 255, 0, 100]);
        assert_eq!(&q[5..], &[0, 0, 0]);
    }
}
