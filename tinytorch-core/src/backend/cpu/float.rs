//! The one float element trait of the CPU's fused kernels (cross-entropy, layer/RMS/batch
//! norm, attention, convolution): f32 and f64, the types they compute in (the op layer
//! widens f16/bf16 to f32 first). What differs between the two lives here: f32 takes the
//! vectorisable `exp` of `fast_math` where a kernel asks for speed, f64 always libm's
//! (f64 is what gradient checks run in); Winograd and the direct convolution are f32 only.

use super::fast_math::{exp_f32, exp_f32_fma};
use super::CpuElement;
use std::ops::{Add, AddAssign, Mul, Sub};

/// f32 or f64, as a fused kernel computes in it.
pub trait KernelFloat:
    CpuElement
    + Copy
    + Send
    + Sync
    + PartialOrd
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + AddAssign
{
    /// Zero.
    const ZERO: Self;
    /// Negative infinity (the identity of max).
    const NEG_INFINITY: Self;
    /// Whether 3x3 and 5x5 convolutions of this type take the Winograd path (f32 only: f64
    /// is kept on the exactly summed im2col path).
    const WINOGRAD: bool;
    /// Conversion from f64.
    fn of(v: f64) -> Self;
    /// Conversion to f64.
    fn f64(self) -> f64;
    /// `e^self`: for f32 the vectorisable approximation of `fast_math` (about 2 ulp; with
    /// fused multiply-adds when `FMA`: only code compiled for an FMA-capable CPU may ask for
    /// them), for f64 the exact libm function.
    fn fast_exp<const FMA: bool>(self) -> Self;
    /// `e^(self - m)`, 0 for `self = -inf` (a masked score). Computed first and then
    /// selected, so that loops over a block of scores stay branch-free.
    #[inline(always)]
    fn exp_shifted(self, m: Self) -> Self {
        let e = (self - m).fast_exp::<false>();
        if self == Self::NEG_INFINITY {
            Self::ZERO
        } else {
            e
        }
    }
    /// The slice as f32 when `Self` is f32, the type of the direct convolution kernels;
    /// `None` for f64.
    fn as_f32_slice(s: &[Self]) -> Option<&[f32]>;
    /// The slice as mutable f32 when `Self` is f32; `None` for f64.
    fn as_f32_slice_mut(s: &mut [Self]) -> Option<&mut [f32]>;
    /// An f32 result as `Self` (the identity for f32).
    fn from_f32_vec(v: Vec<f32>) -> Vec<Self>;
}

impl KernelFloat for f32 {
    const ZERO: Self = 0.0;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    const WINOGRAD: bool = true;
    #[inline(always)]
    fn of(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn fast_exp<const FMA: bool>(self) -> Self {
        if FMA {
            exp_f32_fma(self)
        } else {
            exp_f32(self)
        }
    }
    fn as_f32_slice(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_f32_slice_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
    fn from_f32_vec(v: Vec<f32>) -> Vec<f32> {
        v
    }
}

impl KernelFloat for f64 {
    const ZERO: Self = 0.0;
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    const WINOGRAD: bool = false;
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn fast_exp<const FMA: bool>(self) -> Self {
        f64::exp(self)
    }
    fn as_f32_slice(_: &[f64]) -> Option<&[f32]> {
        None
    }
    fn as_f32_slice_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
    fn from_f32_vec(v: Vec<f32>) -> Vec<f64> {
        v.into_iter().map(f64::from).collect()
    }
}
