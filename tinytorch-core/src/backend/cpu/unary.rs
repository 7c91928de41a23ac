//! Elementwise kernels of one operand (transcendental functions, activations, scalar ops).
//!
//! Each `UnaryOp` is turned into one scalar closure (`float_kernel` / `int_kernel`), and the
//! closure is handed to a *sink* that either maps the operand into a new buffer (`map1`) or
//! updates it in place (`update1`). The match on the op happens once per call, outside the
//! loops, so every (dtype, op) pair gets its own monomorphised inner loop that LLVM can
//! inline and, for the contiguous fast path, vectorise. f16 and bf16 compute in f32 and round
//! once per element.

use super::fast_math;
use super::special;
use super::strided::{map1, map2, update1, wide, Loop, Map1, PAR_CHUNK};
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::backend::UnaryOp;
use crate::base::{DType, Element, Layout};
use crate::error::{Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// The float arithmetic the primitives' kernels need (elementwise functions, softmax), for
/// the two compute types f32 and f64.
pub(crate) trait Real:
    Copy + Send + Sync + PartialOrd + std::ops::Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn of(v: f64) -> Self;
    fn f64(self) -> f64;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn abs(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round_even(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    /// Exact GELU `x * Phi(x)`.
    fn gelu(self) -> Self;
    /// GELU's derivative `Phi(x) + x * phi(x)`.
    fn gelu_grad(self) -> Self;
}

macro_rules! impl_real {
    ($t:ty, $erf:path, $gelu:path, $gelu_grad:path) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            #[inline(always)]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                <$t>::exp_m1(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            // `max`/`min` pick the non-NaN operand; callers handle NaN themselves.
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                <$t>::max(self, o)
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                <$t>::min(self, o)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn gelu(self) -> Self {
                $gelu(self)
            }
            #[inline(always)]
            fn gelu_grad(self) -> Self {
                $gelu_grad(self)
            }
        }
    };
}
// f32 GELU uses the vectorisable erf of fast_math (PyTorch's formula); f64 stays exact.
impl_real!(
    f32,
    libm::erff,
    fast_math::gelu_f32,
    fast_math::gelu_grad_f32
);
impl_real!(f64, libm::erf, gelu_f64, gelu_grad_f64);

/// Exact GELU in f64.
fn gelu_f64(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// GELU's derivative in f64: `Phi(x) + x * phi(x)`.
fn gelu_grad_f64(x: f64) -> f64 {
    const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
    0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
        + x * INV_SQRT_2PI * (-0.5 * x * x).exp()
}

/// A storage element type of a float dtype and the type it computes in (f32 and f64 are
/// their own; f16 and bf16 compute in f32 and round once per result).
pub(crate) trait FloatStore: CpuElement {
    /// The compute type.
    type C: Real;
    /// Widening to the compute type (exact).
    fn up(self) -> Self::C;
    /// Rounding from the compute type.
    fn down(c: Self::C) -> Self;
    /// The slice itself when the storage type is the compute type (no copy to make).
    fn as_compute(s: &[Self]) -> Option<&[Self::C]>;
    /// The output slice itself when the storage type is the compute type.
    fn as_compute_mut(s: &mut [MaybeUninit<Self>]) -> Option<&mut [MaybeUninit<Self::C>]>;
}

macro_rules! impl_float_store {
    ($t:ty, $c:ty, $up:expr, $down:expr, same: $same:tt) => {
        impl FloatStore for $t {
            type C = $c;
            #[inline(always)]
            fn up(self) -> $c {
                $up(self)
            }
            #[inline(always)]
            fn down(c: $c) -> Self {
                $down(c)
            }
            fn as_compute(s: &[Self]) -> Option<&[$c]> {
                impl_float_store!(@same $same, s)
            }
            fn as_compute_mut(s: &mut [MaybeUninit<Self>]) -> Option<&mut [MaybeUninit<$c>]> {
                impl_float_store!(@same $same, s)
            }
        }
    };
    (@same true, $s:expr) => {
        Some($s)
    };
    (@same false, $s:expr) => {{
        let _ = $s;
        None
    }};
}
impl_float_store!(f32, f32, |x| x, |x| x, same: true);
impl_float_store!(f64, f64, |x| x, |x| x, same: true);
impl_float_store!(f16, f32, f16::to_f32, f16::from_f32, same: false);
impl_float_store!(bf16, f32, bf16::to_f32, <bf16 as Element>::from_f32, same: false);

/// Where a scalar kernel `f: T -> T` is applied: a new buffer or in place.
trait Sink<T> {
    type Out;
    fn apply(self, f: impl Fn(T) -> T + Sync + Copy) -> Self::Out;
}

/// Maps the elements of `src[layout]` into a new row-major buffer.
struct MapSink<'a, S> {
    src: &'a [S],
    layout: &'a Layout,
}

impl<S: FloatStore> Sink<S::C> for MapSink<'_, S> {
    type Out = CpuStorage;
    fn apply(self, f: impl Fn(S::C) -> S::C + Sync + Copy) -> CpuStorage {
        CpuStorage::from_vec(map1(self.src, self.layout, |x: S| S::down(f(x.up()))))
    }
}

/// Overwrites the elements of `dst[layout]`.
struct UpdateSink<'a, S> {
    dst: &'a mut [S],
    layout: &'a Layout,
}

impl<S: FloatStore> Sink<S::C> for UpdateSink<'_, S> {
    type Out = ();
    fn apply(self, f: impl Fn(S::C) -> S::C + Sync + Copy) {
        update1(self.dst, self.layout, |x: S| S::down(f(x.up())));
    }
}

/// Integer sinks: the kernel works on the storage type directly.
struct IntMapSink<'a, S> {
    src: &'a [S],
    layout: &'a Layout,
}

impl<S: CpuElement> Sink<S> for IntMapSink<'_, S> {
    type Out = CpuStorage;
    fn apply(self, f: impl Fn(S) -> S + Sync + Copy) -> CpuStorage {
        CpuStorage::from_vec(map1(self.src, self.layout, f))
    }
}

struct IntUpdateSink<'a, S> {
    dst: &'a mut [S],
    layout: &'a Layout,
}

impl<S: CpuElement> Sink<S> for IntUpdateSink<'_, S> {
    type Out = ();
    fn apply(self, f: impl Fn(S) -> S + Sync + Copy) {
        update1(self.dst, self.layout, f);
    }
}

/// `sqrt(2 / pi)`, the scale inside GELU's tanh approximation.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of GELU's tanh approximation.
const GELU_KAPPA: f64 = 0.044715;

/// `1 / (1 + exp(-x))`: exact in the limits (exp overflowing to inf gives 0, never NaN).
#[inline(always)]
fn sigmoid<T: Real>(x: T) -> T {
    T::ONE.div(T::ONE.add((-x).exp()))
}

/// Clamp with PyTorch's NaN rule: a NaN input stays NaN. Bounds are already non-NaN.
#[inline(always)]
fn clamp<T: Real>(x: T, lo: T, hi: T) -> T {
    if x.is_nan() {
        x
    } else {
        x.max(lo).min(hi)
    }
}

/// Run the float kernel of `op` through `sink`.
fn float_kernel<T: Real, K: Sink<T>>(op: UnaryOp, sink: K) -> K::Out {
    let c = T::of;
    match op {
        UnaryOp::Neg => sink.apply(|x: T| -x),
        UnaryOp::Abs => sink.apply(|x: T| x.abs()),
        // (0 < x) - (x < 0), as PyTorch: sign(NaN) = 0 and sign(-0) = 0.
        UnaryOp::Sign => sink.apply(|x: T| {
            if x > T::ZERO {
                T::ONE
            } else if x < T::ZERO {
                -T::ONE
            } else {
                T::ZERO
            }
        }),
        UnaryOp::Exp => sink.apply(|x: T| x.exp()),
        UnaryOp::Log => sink.apply(|x: T| x.ln()),
        UnaryOp::Log2 => sink.apply(|x: T| x.log2()),
        UnaryOp::Log1p => sink.apply(|x: T| x.ln_1p()),
        UnaryOp::Expm1 => sink.apply(|x: T| x.exp_m1()),
        UnaryOp::Sqrt => sink.apply(|x: T| x.sqrt()),
        UnaryOp::Rsqrt => sink.apply(|x: T| T::ONE.div(x.sqrt())),
        UnaryOp::Square => sink.apply(|x: T| x.mul(x)),
        UnaryOp::Reciprocal => sink.apply(|x: T| T::ONE.div(x)),
        UnaryOp::Sin => sink.apply(|x: T| x.sin()),
        UnaryOp::Cos => sink.apply(|x: T| x.cos()),
        UnaryOp::Tan => sink.apply(|x: T| x.tan()),
        UnaryOp::Tanh => sink.apply(|x: T| x.tanh()),
        UnaryOp::Sigmoid => sink.apply(sigmoid::<T>),
        // `x < 0 ? 0 : x` keeps NaN (as torch.relu does).
        UnaryOp::Relu => sink.apply(|x: T| if x < T::ZERO { T::ZERO } else { x }),
        UnaryOp::LeakyRelu(slope) => {
            let s = c(slope);
            sink.apply(move |x: T| if x > T::ZERO { x } else { x.mul(s) })
        }
        UnaryOp::Elu(alpha) => {
            let a = c(alpha);
            sink.apply(move |x: T| if x > T::ZERO { x } else { a.mul(x.exp_m1()) })
        }
        UnaryOp::Gelu => sink.apply(|x: T| x.gelu()),
        UnaryOp::GeluTanh => {
            let (beta, kappa, half) = (c(SQRT_2_OVER_PI), c(GELU_KAPPA), c(0.5));
            sink.apply(move |x: T| {
                let inner = beta.mul(x.add(kappa.mul(x).mul(x).mul(x)));
                half.mul(x).mul(T::ONE.add(inner.tanh()))
            })
        }
        UnaryOp::Silu => sink.apply(|x: T| x.div(T::ONE.add((-x).exp()))),
        UnaryOp::Softplus { beta, threshold } => {
            let (b, th) = (c(beta), c(threshold));
            // Linear above the threshold, where log1p(exp(bx)) would overflow.
            sink.apply(move |x: T| {
                let bx = x.mul(b);
                if bx > th {
                    x
                } else {
                    bx.exp().ln_1p().div(b)
                }
            })
        }
        UnaryOp::Erf => sink.apply(|x: T| x.erf()),
        // The special functions compute in f64 and round once (see special.rs).
        UnaryOp::Erfc => sink.apply(|x: T| T::of(special::erfc(x.f64()))),
        UnaryOp::Erfinv => sink.apply(|x: T| T::of(special::erfinv(x.f64()))),
        UnaryOp::Lgamma => sink.apply(|x: T| T::of(special::lgamma(x.f64()))),
        UnaryOp::Digamma => sink.apply(|x: T| T::of(special::digamma(x.f64()))),
        UnaryOp::Trigamma => sink.apply(|x: T| T::of(special::trigamma(x.f64()))),
        UnaryOp::I0 => sink.apply(|x: T| T::of(special::i0(x.f64()))),
        UnaryOp::I0e => sink.apply(|x: T| T::of(special::i0e(x.f64()))),
        UnaryOp::I1 => sink.apply(|x: T| T::of(special::i1(x.f64()))),
        UnaryOp::I1e => sink.apply(|x: T| T::of(special::i1e(x.f64()))),
        UnaryOp::Floor => sink.apply(|x: T| x.floor()),
        UnaryOp::Ceil => sink.apply(|x: T| x.ceil()),
        UnaryOp::Round => sink.apply(|x: T| x.round_even()),
        UnaryOp::AddScalar(s) => {
            let s = c(s);
            sink.apply(move |x: T| x.add(s))
        }
        UnaryOp::MulScalar(s) => {
            let s = c(s);
            sink.apply(move |x: T| x.mul(s))
        }
        UnaryOp::PowScalar(e) => {
            let e = c(e);
            sink.apply(move |x: T| x.powf(e))
        }
        UnaryOp::ScalarPow(b) => {
            let b = c(b);
            sink.apply(move |x: T| b.powf(x))
        }
        UnaryOp::Clamp(lo, hi) => {
            if lo.is_some_and(f64::is_nan) || hi.is_some_and(f64::is_nan) {
                // A NaN bound makes every element NaN in PyTorch.
                return sink.apply(|_: T| T::NAN);
            }
            let lo = c(lo.unwrap_or(f64::NEG_INFINITY));
            let hi = c(hi.unwrap_or(f64::INFINITY));
            sink.apply(move |x: T| clamp(x, lo, hi))
        }
    }
}

/// Integer arithmetic the integer kernels need (wrapping, as PyTorch's integer ops).
trait IntElem: CpuElement + Ord {
    const SIGNED: bool;
    fn one() -> Self;
    fn of(v: f64) -> Self;
    /// Saturating conversion, for bounds.
    fn sat(v: f64) -> Self;
    fn wneg(self) -> Self;
    fn wabs(self) -> Self;
    fn wadd(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn wpow(self, e: u32) -> Self;
    fn as_exp(self) -> Option<u32>;
}

macro_rules! impl_int_elem {
    ($t:ty, $signed:expr) => {
        impl IntElem for $t {
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn one() -> Self {
                1
            }
            #[inline(always)]
            fn of(v: f64) -> Self {
                <$t as crate::base::Element>::from_f64(v)
            }
            #[inline(always)]
            fn sat(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn wneg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn wabs(self) -> Self {
                #[allow(unused_comparisons)]
                if self < 0 {
                    self.wrapping_neg()
                } else {
                    self
                }
            }
            #[inline(always)]
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn wpow(self, e: u32) -> Self {
                self.wrapping_pow(e)
            }
            #[inline(always)]
            fn as_exp(self) -> Option<u32> {
                u32::try_from(self).ok()
            }
        }
    };
}
impl_int_elem!(i64, true);
impl_int_elem!(i32, true);
impl_int_elem!(u8, false);

/// True when `v` is a whole number, so that an integer tensor keeps its dtype under it.
fn is_integral(v: f64) -> bool {
    v.is_finite() && v.fract() == 0.0
}

/// Run the integer kernel of `op` through `sink`, or say why the op has no integer form
/// (the ops layer computes those in float).
fn int_kernel<T: IntElem, K: Sink<T>>(op: UnaryOp, sink: K) -> Result<K::Out> {
    let zero = T::zero();
    Ok(match op {
        UnaryOp::Neg => sink.apply(|x: T| x.wneg()),
        UnaryOp::Abs => sink.apply(|x: T| x.wabs()),
        UnaryOp::Sign => sink.apply(move |x: T| {
            if x > zero {
                T::one()
            } else if x < zero {
                T::one().wneg()
            } else {
                zero
            }
        }),
        UnaryOp::Square => sink.apply(|x: T| x.wmul(x)),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => sink.apply(|x: T| x),
        UnaryOp::Relu if T::SIGNED => sink.apply(move |x: T| x.max(zero)),
        UnaryOp::Relu => sink.apply(|x: T| x),
        UnaryOp::AddScalar(s) if is_integral(s) => {
            let s = T::of(s);
            sink.apply(move |x: T| x.wadd(s))
        }
        UnaryOp::MulScalar(s) if is_integral(s) => {
            let s = T::of(s);
            sink.apply(move |x: T| x.wmul(s))
        }
        UnaryOp::PowScalar(e) if is_integral(e) && (0.0..=u32::MAX as f64).contains(&e) => {
            let e = e as u32;
            sink.apply(move |x: T| x.wpow(e))
        }
        // A negative integer exponent of an integer base truncates to 0 (except for base 1),
        // matching the binary kernel's integer `pow`.
        UnaryOp::ScalarPow(b) if is_integral(b) => {
            let b = T::of(b);
            sink.apply(move |x: T| x.as_exp().map_or(zero, |e| b.wpow(e)))
        }
        UnaryOp::Clamp(lo, hi) if lo.is_none_or(is_integral) && hi.is_none_or(is_integral) => {
            // Bounds outside the type's range saturate, which clamps exactly as comparing in
            // a wider type would.
            let lo = T::sat(lo.unwrap_or(f64::NEG_INFINITY));
            let hi = T::sat(hi.unwrap_or(f64::INFINITY));
            sink.apply(move |x: T| x.max(lo).min(hi))
        }
        _ => {
            return Err(Error::dtype(
                "unary",
                format!("{op:?} is not defined for {} tensors", T::DTYPE),
            ))
        }
    })
}

/// The bool kernels: only the ops that are the identity on {0, 1}.
fn bool_kernel<K: Sink<bool>>(op: UnaryOp, sink: K) -> Result<K::Out> {
    match op {
        UnaryOp::Sign
        | UnaryOp::Abs
        | UnaryOp::Relu
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round => Ok(sink.apply(|x: bool| x)),
        _ => Err(Error::dtype(
            "unary",
            format!("{op:?} is not defined for bool tensors"),
        )),
    }
}

/// `op(x)` elementwise.
pub fn unary(s: &CpuStorage, layout: &Layout, op: UnaryOp) -> Result<CpuStorage> {
    if op == UnaryOp::Gelu && gelu_slices_take(s.dtype()) && layout.contiguous_range().is_none() {
        // The slice kernels round as the CPU's FMA copies do; strided views are made
        // contiguous first, so that a view's GELU is bit for bit its copy's.
        let dense = super::convert::to_contiguous(s, layout);
        return unary(&dense, &Layout::contiguous(layout.shape()), op);
    }
    if let (UnaryOp::Gelu, CpuStorage::F32(v), Some((a, b))) = (op, s, layout.contiguous_range()) {
        // The transformer MLP's activation: the vectorised kernel on chunks across the
        // threads (the generic map computes it 4 lanes wide).
        let x = &v[a..b];
        let mut out = super::allocator::take::<f32>(x.len());
        out.spare_capacity_mut()[..x.len()]
            .par_chunks_mut(PAR_CHUNK)
            .zip(x.par_chunks(PAR_CHUNK))
            .for_each(|(o, x)| fast_math::gelu_forward_f32(x, o));
        // SAFETY: the kernel wrote every element of each chunk.
        unsafe { out.set_len(x.len()) };
        return Ok(CpuStorage::F32(out.into()));
    }
    if let (UnaryOp::Gelu, Some((a, b))) = (op, layout.contiguous_range()) {
        let gelu =
            |x: &[f32], _: &[f32], o: &mut [MaybeUninit<f32>]| fast_math::gelu_forward_f32(x, o);
        match s {
            CpuStorage::BF16(v) => {
                return Ok(CpuStorage::from_vec(half_through_f32(&v[a..b], None, gelu)))
            }
            CpuStorage::F16(v) => {
                return Ok(CpuStorage::from_vec(half_through_f32(&v[a..b], None, gelu)))
            }
            _ => {}
        }
    }
    match s {
        CpuStorage::F32(v) => Ok(float_kernel(op, MapSink { src: v, layout })),
        CpuStorage::F64(v) => Ok(float_kernel(op, MapSink { src: v, layout })),
        CpuStorage::F16(v) => Ok(float_kernel(op, MapSink { src: v, layout })),
        CpuStorage::BF16(v) => Ok(float_kernel(op, MapSink { src: v, layout })),
        CpuStorage::I64(v) => int_kernel(op, IntMapSink { src: v, layout }),
        CpuStorage::I32(v) => int_kernel(op, IntMapSink { src: v, layout }),
        CpuStorage::U8(v) => int_kernel(op, IntMapSink { src: v, layout }),
        CpuStorage::Bool(v) => bool_kernel(op, IntMapSink { src: v, layout }),
    }
}

/// `x = op(x)` elementwise, in place.
pub fn unary_inplace(s: &mut CpuStorage, layout: &Layout, op: UnaryOp) -> Result<()> {
    match s {
        CpuStorage::F32(v) => float_kernel(op, UpdateSink { dst: v, layout }),
        CpuStorage::F64(v) => float_kernel(op, UpdateSink { dst: v, layout }),
        CpuStorage::F16(v) => float_kernel(op, UpdateSink { dst: v, layout }),
        CpuStorage::BF16(v) => float_kernel(op, UpdateSink { dst: v, layout }),
        CpuStorage::I64(v) => int_kernel(op, IntUpdateSink { dst: v, layout })?,
        CpuStorage::I32(v) => int_kernel(op, IntUpdateSink { dst: v, layout })?,
        CpuStorage::U8(v) => int_kernel(op, IntUpdateSink { dst: v, layout })?,
        CpuStorage::Bool(v) => bool_kernel(op, IntUpdateSink { dst: v, layout })?,
    }
    Ok(())
}

/// Elements per piece that [`half_through_f32`] widens at a time (4 KiB of f32 per operand).
const PIECE: usize = 1024;

/// An f32 slice kernel of `fast_math` (`kernel(x, y, out)`) on the contiguous elements of a
/// half-precision tensor `x` (and a second operand `y` of the same length, or none): each
/// task widens 1,024-element pieces into f32 buffers, runs the vector kernel and rounds its
/// output back, where the generic map would compute one element at a time without it.
fn half_through_f32<S: FloatStore<C = f32>>(
    x: &[S],
    y: Option<&[S]>,
    kernel: impl Fn(&[f32], &[f32], &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<S> {
    let len = x.len();
    let mut out = super::allocator::take::<S>(len);
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(i, dst)| {
            let (start, n) = (i * PIECE, dst.len());
            let (mut wx, mut wy) = ([0f32; PIECE], [0f32; PIECE]);
            let mut wo = [MaybeUninit::<f32>::uninit(); PIECE];
            wide(Widen {
                dst: &mut wx[..n],
                src: &x[start..start + n],
            });
            if let Some(y) = y {
                wide(Widen {
                    dst: &mut wy[..n],
                    src: &y[start..start + n],
                });
            }
            kernel(&wx[..n], &wy[..n], &mut wo[..n]);
            // SAFETY: the kernel wrote its n outputs.
            let wo = unsafe { &*(&wo[..n] as *const [MaybeUninit<f32>] as *const [f32]) };
            wide(Map1 {
                o: dst,
                x: wo,
                f: &S::down,
            });
        });
    // SAFETY: every piece of the first `len` elements was written above.
    unsafe { out.set_len(len) };
    out
}

/// `dst[i] = src[i]` widened to the compute type (in `wide`'s AVX-512 copy where the CPU
/// has it).
pub(crate) struct Widen<'a, S: FloatStore> {
    /// The widened elements, as many as `src` has.
    pub(crate) dst: &'a mut [S::C],
    /// The stored elements.
    pub(crate) src: &'a [S],
}

impl<S: FloatStore> Loop for Widen<'_, S> {
    #[inline(always)]
    fn run(self) {
        for (w, v) in self.dst.iter_mut().zip(self.src) {
            *w = v.up();
        }
    }
}

/// `half_through_f32`'s GELU backward: `x` the input, `g` the upstream gradient.
fn gelu_grad(x: &[f32], g: &[f32], out: &mut [MaybeUninit<f32>]) {
    fast_math::gelu_backward_f32(g, x, out)
}

/// The element ranges of two layouts that are both contiguous.
fn contiguous_pair(
    a: &Layout,
    b: &Layout,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let ((a0, a1), (b0, b1)) = (a.contiguous_range()?, b.contiguous_range()?);
    Some((a0..a1, b0..b1))
}

/// Whether GELU of `dtype` runs on `fast_math`'s f32 slice kernels (f32, and the half types
/// widened), whose rounding the scalar fallback does not share where the CPU has FMA.
fn gelu_slices_take(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
}

/// GELU's backward `g * gelu'(x)` in one pass over the upstream gradient `g` and the input
/// `x` (same shape and float dtype; half types compute in f32). The composite rule of
/// `ops/unary.rs` makes ~12 passes with a buffer each.
pub(crate) fn gelu_backward(
    g: &CpuStorage,
    gl: &Layout,
    x: &CpuStorage,
    xl: &Layout,
) -> Result<CpuStorage> {
    fn run<S: FloatStore>(g: &[S], gl: &Layout, x: &[S], xl: &Layout) -> CpuStorage {
        CpuStorage::from_vec(map2(g, gl, x, xl, |g: S, x: S| {
            S::down(g.up().mul(x.up().gelu_grad()))
        }))
    }
    /// f16/bf16: contiguous operands through the f32 vector kernel.
    fn half<S: FloatStore<C = f32>>(g: &[S], gl: &Layout, x: &[S], xl: &Layout) -> CpuStorage {
        match contiguous_pair(gl, xl) {
            Some((gr, xr)) => {
                CpuStorage::from_vec(half_through_f32(&x[xr], Some(&g[gr]), gelu_grad))
            }
            None => run(g, gl, x, xl),
        }
    }
    if gelu_slices_take(x.dtype()) && g.dtype() == x.dtype() && contiguous_pair(gl, xl).is_none() {
        // As in `unary`: strided operands through the slice kernels, so that they round alike.
        let dense = |s: &CpuStorage, l: &Layout| super::convert::to_contiguous(s, l);
        let (g, x, l) = (dense(g, gl), dense(x, xl), Layout::contiguous(xl.shape()));
        return gelu_backward(&g, &l, &x, &l);
    }
    match (g, x) {
        (CpuStorage::F32(g), CpuStorage::F32(x)) => {
            match (gl.contiguous_range(), xl.contiguous_range()) {
                // The common case, a contiguous gradient and input: the vectorised kernel on
                // 16K-element chunks across the threads.
                (Some((g0, g1)), Some((x0, x1))) => {
                    let (g, x) = (&g[g0..g1], &x[x0..x1]);
                    let mut out = super::allocator::take::<f32>(x.len());
                    out.spare_capacity_mut()[..x.len()]
                        .par_chunks_mut(PAR_CHUNK)
                        .zip(g.par_chunks(PAR_CHUNK).zip(x.par_chunks(PAR_CHUNK)))
                        .for_each(|(o, (g, x))| fast_math::gelu_backward_f32(g, x, o));
                    // SAFETY: the kernel wrote every element of each chunk.
                    unsafe { out.set_len(x.len()) };
                    Ok(CpuStorage::F32(out.into()))
                }
                _ => Ok(run(g, gl, x, xl)),
            }
        }
        (CpuStorage::F64(g), CpuStorage::F64(x)) => Ok(run(g, gl, x, xl)),
        (CpuStorage::F16(g), CpuStorage::F16(x)) => Ok(half(g, gl, x, xl)),
        (CpuStorage::BF16(g), CpuStorage::BF16(x)) => Ok(half(g, gl, x, xl)),
        _ => Err(Error::dtype(
            "gelu_backward",
            "gradient and input must share a float dtype",
        )),
    }
}

/// GELU's or ReLU's backward written over the upstream gradient `g` itself (the caller
/// holds its only handle), for contiguous f32/f64 operands: the same values as
/// [`gelu_backward`] / [`relu_backward`] without a fresh output buffer. `Ok(false)`, nothing
/// done, for other dtypes or layouts.
pub(crate) fn activation_backward_inplace(
    gelu: bool,
    g: &mut CpuStorage,
    gl: &Layout,
    saved: &CpuStorage,
    sl: &Layout,
) -> Result<bool> {
    let Some((gr, sr)) = contiguous_pair(gl, sl) else {
        return Ok(false);
    };
    if gr.len() != sr.len() {
        return Err(Error::shape(
            "activation_backward",
            format!("gradient of {} elements for {}", gr.len(), sr.len()),
        ));
    }
    fn relu<T: CpuElement + PartialOrd>(g: &mut [T], y: &[T]) {
        g.par_chunks_mut(PAR_CHUNK)
            .zip(y.par_chunks(PAR_CHUNK))
            .for_each(|(g, y)| wide(ReluGradInPlace { g, y }));
    }
    match (g, saved) {
        (CpuStorage::F32(g), CpuStorage::F32(s)) if gelu => {
            let (g, x) = (&mut g.as_mut_slice()[gr], &s[sr]);
            g.par_chunks_mut(PAR_CHUNK)
                .zip(x.par_chunks(PAR_CHUNK))
                .for_each(|(g, x)| fast_math::gelu_backward_f32_inplace(g, x));
        }
        (CpuStorage::F32(g), CpuStorage::F32(s)) => relu(&mut g.as_mut_slice()[gr], &s[sr]),
        (CpuStorage::F64(g), CpuStorage::F64(s)) if !gelu => {
            relu(&mut g.as_mut_slice()[gr], &s[sr])
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `g = 0` where `y <= 0`, written as a select of every element (a store only where the
/// condition holds is a branch per element, which random signs mispredict half the time).
struct ReluGradInPlace<'a, T> {
    g: &'a mut [T],
    y: &'a [T],
}

impl<T: CpuElement + PartialOrd> Loop for ReluGradInPlace<'_, T> {
    #[inline(always)]
    fn run(self) {
        // `y <= 0` is false for NaN, which passes the gradient (as `relu_backward`).
        for (g, &y) in self.g.iter_mut().zip(self.y) {
            *g = if y <= T::zero() { T::zero() } else { *g };
        }
    }
}

/// ReLU's backward: `g` where the forward output `y` is positive, 0 where `y <= 0` (NaN
/// passes the gradient, as PyTorch's `threshold_backward`). One pass over `g` and `y` (same
/// shape and float dtype) instead of a comparison, a bool buffer and a masked fill.
pub(crate) fn relu_backward(
    g: &CpuStorage,
    gl: &Layout,
    y: &CpuStorage,
    yl: &Layout,
) -> Result<CpuStorage> {
    fn run<S: FloatStore>(g: &[S], gl: &Layout, y: &[S], yl: &Layout) -> CpuStorage {
        let zero = S::down(S::C::ZERO);
        CpuStorage::from_vec(map2(g, gl, y, yl, move |g: S, y: S| {
            if y.up() <= S::C::ZERO {
                zero
            } else {
                g
            }
        }))
    }
    match (g, y) {
        (CpuStorage::F32(g), CpuStorage::F32(y)) => Ok(run(g, gl, y, yl)),
        (CpuStorage::F64(g), CpuStorage::F64(y)) => Ok(run(g, gl, y, yl)),
        (CpuStorage::F16(g), CpuStorage::F16(y)) => Ok(run(g, gl, y, yl)),
        (CpuStorage::BF16(g), CpuStorage::BF16(y)) => Ok(run(g, gl, y, yl)),
        _ => Err(Error::dtype(
            "relu_backward",
            "gradient and output must share a float dtype",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::strided::PAR_THRESHOLD;

    /// The naive reference: one element at a time through f64, no walker, no fast path.
    fn reference(x: f64, op: UnaryOp) -> f64 {
        let v = CpuStorage::F64(vec![x].into());
        unary(&v, &Layout::contiguous(&[1]), op)
            .unwrap()
            .to_f64_vec()[0]
    }

    #[test]
    fn strided_parallel_and_contiguous_paths_agree() {
        let n = PAR_THRESHOLD * 2 + 5;
        let data: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.37).sin() * 4.0).collect();
        let s = CpuStorage::F64(data.clone().into());
        // Every other element: a strided layout walked in parallel chunks.
        let l = Layout::from_parts(vec![n], vec![2], 1);
        for op in [
            UnaryOp::Sigmoid,
            UnaryOp::Gelu,
            UnaryOp::Clamp(Some(-1.0), Some(2.0)),
            UnaryOp::Elu(0.5),
        ] {
            let out = unary(&s, &l, op).unwrap().to_f64_vec();
            for (i, &o) in out.iter().enumerate().step_by(997) {
                assert_eq!(o, reference(data[2 * i + 1], op), "{op:?} at {i}");
            }
            let mut inplace = s.clone();
            unary_inplace(&mut inplace, &l, op).unwrap();
            let w = inplace.to_f64_vec();
            assert_eq!(
                w[0], data[0],
                "in place leaves elements outside the layout alone"
            );
            assert_eq!(w[2 * 11 + 1], out[11]);
        }
    }

    #[test]
    fn half_types_round_the_f32_result_once() {
        let s = CpuStorage::F16(vec![f16::from_f32(0.3)].into());
        let out = unary(&s, &Layout::contiguous(&[1]), UnaryOp::Exp).unwrap();
        assert_eq!(
            out,
            CpuStorage::F16(vec![f16::from_f32(f16::from_f32(0.3).to_f32().exp())].into())
        );
    }

    /// bf16/f16 GELU and its backward through the f32 vector kernels (contiguous, pieces of
    /// 1,024 and a remainder) against the generic one-element map (strided layout): both round
    /// each f32 result once, and the vector kernels agree with the scalar ones to a few f32
    /// ulps, far below a bf16 or f16 ulp, so at most one half-precision ulp apart.
    #[test]
    fn half_gelu_through_f32_kernels_matches_the_generic_map() {
        let n = 2 * PIECE + 37;
        let xs: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.61).sin() * 5.0).collect();
        let gs: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.23).cos()).collect();
        let every_other = Layout::from_parts(vec![n], vec![2], 0);
        let half = Layout::contiguous(&[n]);
        for (x, g, ulp) in [
            (
                CpuStorage::BF16(xs.iter().map(|&v| bf16::from_f64(v)).collect()),
                CpuStorage::BF16(gs.iter().map(|&v| bf16::from_f64(v)).collect()),
                1.0 / 128.0,
            ),
            (
                CpuStorage::F16(xs.iter().map(|&v| f16::from_f64(v)).collect()),
                CpuStorage::F16(gs.iter().map(|&v| f16::from_f64(v)).collect()),
                1.0 / 1024.0,
            ),
        ] {
            // The same elements, contiguous (every other element copied out) and strided.
            let xc = super::super::convert::to_contiguous(&x, &every_other);
            let gc = super::super::convert::to_contiguous(&g, &every_other);
            let pairs = [
                (
                    unary(&xc, &half, UnaryOp::Gelu).unwrap(),
                    unary(&x, &every_other, UnaryOp::Gelu).unwrap(),
                ),
                (
                    gelu_backward(&gc, &half, &xc, &half).unwrap(),
                    gelu_backward(&g, &every_other, &x, &every_other).unwrap(),
                ),
            ];
            for (fast, generic) in pairs {
                for (a, b) in fast.to_f64_vec().iter().zip(generic.to_f64_vec()) {
                    assert!((a - b).abs() <= ulp * b.abs().max(1e-2), "{a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn integer_kernels_wrap_and_refuse_float_ops() {
        let s = CpuStorage::U8(vec![0, 1, 200].into());
        let l = Layout::contiguous(&[3]);
        assert_eq!(
            unary(&s, &l, UnaryOp::Neg).unwrap(),
            CpuStorage::U8(vec![0, 255, 56].into())
        );
        assert_eq!(
            unary(&s, &l, UnaryOp::Clamp(Some(1.0), Some(100.0))).unwrap(),
            CpuStorage::U8(vec![1, 1, 100].into())
        );
        let i = CpuStorage::I64(vec![-3, 0, 4].into());
        assert_eq!(
            unary(&i, &l, UnaryOp::Sign).unwrap(),
            CpuStorage::I64(vec![-1, 0, 1].into())
        );
        assert_eq!(
            unary(&i, &l, UnaryOp::Relu).unwrap(),
            CpuStorage::I64(vec![0, 0, 4].into())
        );
        assert!(unary(&i, &l, UnaryOp::Exp).is_err());
        assert!(unary(&i, &l, UnaryOp::Clamp(Some(0.5), None)).is_err());
    }
}
