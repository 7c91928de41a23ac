//! Element types: the `DType` tag, type promotion, and the `Element` trait that lets a kernel be
//! written once and instantiated for every dtype.

use super::scalar::Scalar;
use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor. The default for floating-point data is `F32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Boolean masks.
    Bool,
    /// Unsigned bytes (images).
    U8,
    /// 32-bit integers (`torch.int32`, `torch.int`).
    I32,
    /// 64-bit integers (indices, labels).
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Single precision, the default float.
    F32,
    /// Double precision (gradient checks).
    F64,
}

impl DType {
    /// Every dtype, in promotion order.
    pub const ALL: [DType; 8] = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// True for f16, bf16, f32 and f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// PyTorch's legacy tensor-type stem of the dtype (`Float` of `torch.FloatTensor`), which
    /// its error messages name.
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    /// True for the half-precision floats f16 and bf16.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// True for u8, i32 and i64.
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I32 | DType::I64)
    }

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// PyTorch's name for the dtype (`float32`, `int64`, ...).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The dtype of `a op b` under PyTorch's promotion rules for two tensors of the same
    /// category order: bool < u8 < i32 < i64 < floats; f16 with bf16 gives f32.
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        match (a, b) {
            (DType::F16, DType::BF16) | (DType::BF16, DType::F16) => DType::F32,
            _ => a.max(b),
        }
    }

    /// The dtype that an op producing floats gives for this input: floats stay, everything
    /// else becomes the default float (f32), as `torch.exp(int_tensor)` does.
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }
}

/// PyTorch's result type of an op over several operands (`torch.result_type`, c10's
/// `ResultTypeState`). Operands fall into three priority classes: tensors with dims, 0-d
/// tensors, and plain numbers ([`Scalar`]s). A lower class decides the dtype only when it
/// brings a higher category (bool < integer < float) than the classes above it, so
/// `f32[3] + f64 0-d` is f32, `i64[3] + f32 0-d` is f32 and `i64[3] * 2.0` is the default
/// float f32, while `u8[3] + i64 0-d` stays u8.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResultType {
    dimensioned: Option<DType>,
    zero_dim: Option<DType>,
    scalar: Option<DType>,
}

impl ResultType {
    /// No operands yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tensor operand of `dtype` with `ndim` dims.
    pub fn tensor(mut self, dtype: DType, ndim: usize) -> Self {
        let slot = if ndim == 0 {
            &mut self.zero_dim
        } else {
            &mut self.dimensioned
        };
        *slot = Some(slot.map_or(dtype, |d| DType::promote(d, dtype)));
        self
    }

    /// Add a plain-number operand.
    pub fn scalar(mut self, value: Scalar) -> Self {
        let dtype = value.dtype();
        self.scalar = Some(self.scalar.map_or(dtype, |d| DType::promote(d, dtype)));
        self
    }

    /// Add several plain-number operands (a clamp's bounds).
    pub fn scalars(self, values: impl IntoIterator<Item = Scalar>) -> Self {
        values.into_iter().fold(self, ResultType::scalar)
    }

    /// The result dtype (f32 when there were no operands).
    pub fn finish(self) -> DType {
        combine_categories(
            self.dimensioned,
            combine_categories(self.zero_dim, self.scalar),
        )
        .unwrap_or(DType::F32)
    }
}

/// c10's `combine_categories`: the higher class wins unless the lower one brings a higher
/// category (a float under integers, or anything under bool).
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, l) => l,
        (h, None) => h,
        (Some(h), Some(l)) => Some(if h.is_float() {
            h
        } else if h == DType::Bool || l.is_float() {
            DType::promote(h, l)
        } else {
            h
        }),
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.torch_name())
    }
}

/// A Rust type that can be the element of a tensor.
pub trait Element:
    Copy + Send + Sync + PartialOrd + PartialEq + Default + fmt::Debug + 'static
{
    /// The dtype tag for this type.
    const DTYPE: DType;
    /// Lossy conversion to f64 (exact for every type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Conversion from f64 with Rust's `as` semantics for integers (truncation, saturation).
    fn from_f64(v: f64) -> Self;
    /// Conversion to f32, used by reduced-precision kernels that compute in f32.
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    /// Conversion from f32.
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    /// Exact conversion to i64 for integer and bool types (used by index ops).
    fn to_i64(self) -> i64 {
        self.to_f64() as i64
    }
    /// Zero.
    fn zero() -> Self {
        Self::default()
    }
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    // Through f32, as PyTorch converts (c10::Half has no double constructor): a value just
    // above a half-way point can round to it in f32 and then to even.
    fn from_f64(v: f64) -> Self {
        f16::from_f32(v as f32)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

impl Element for bf16 {
    const DTYPE: DType = DType::BF16;
    // Through f32 (exact): half's direct conversion branches on every class of value and
    // stops loops that sum bf16 into f64 from vectorising.
    fn to_f64(self) -> f64 {
        bf16::to_f32(self) as f64
    }
    // Through f32, as PyTorch (see f16).
    fn from_f64(v: f64) -> Self {
        bf16_from_f32(v as f32)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        bf16_from_f32(v)
    }
}

/// `v` rounded to the nearest bf16, ties to even, NaNs kept quiet: the bits of
/// `half::bf16::from_f32` (and of PyTorch's `c10::BFloat16`), computed without branches so
/// that loops of casts vectorise (half's version tests each value's class in turn).
#[inline(always)]
pub(crate) fn bf16_from_f32(v: f32) -> bf16 {
    let x = v.to_bits();
    // Adding 0x7FFF plus the kept part's lowest bit carries into it exactly when the
    // dropped half is above one half, or at one half with an odd kept part.
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16;
    let quiet_nan = (x >> 16) | 0x40;
    let is_nan = (x & 0x7FFF_FFFF) > 0x7F80_0000;
    bf16::from_bits(if is_nan { quiet_nan } else { rounded } as u16)
}

impl Element for i64 {
    const DTYPE: DType = DType::I64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as i64
    }
    fn to_i64(self) -> i64 {
        self
    }
}

impl Element for i32 {
    const DTYPE: DType = DType::I32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        // Finite values wrap modulo 2^32, as PyTorch's casts to int32 do (through i64);
        // the infinities saturate, so that they serve as the identities of max and min.
        if v.is_infinite() {
            v as i32
        } else {
            (v as i64) as i32
        }
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Element for u8 {
    const DTYPE: DType = DType::U8;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        // PyTorch wraps modulo 256 when casting out-of-range values to uint8.
        (v as i64) as u8
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
}

/// Float element types: the kernels of transcendental functions are written for these.
pub trait FloatElement: Element {}
impl FloatElement for f32 {}
impl FloatElement for f64 {}
impl FloatElement for f16 {}
impl FloatElement for bf16 {}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    /// Casts to int32 wrap finite values (as PyTorch's through int64) and saturate the
    /// infinities (the identities of max and min).
    #[test]
    fn int32_from_f64_wraps_and_saturates() {
        assert_eq!(i32::from_f64(2f64.powi(40) + 5.0), 5);
        assert_eq!(i32::from_f64(-3.7), -3);
        assert_eq!(i32::from_f64(f64::INFINITY), i32::MAX);
        assert_eq!(i32::from_f64(f64::NEG_INFINITY), i32::MIN);
        assert_eq!(I32.size_in_bytes(), 4);
        assert!(I32.is_int() && !I32.is_float());
    }

    fn of(operands: &[(DType, usize)]) -> DType {
        operands
            .iter()
            .fold(ResultType::new(), |r, &(d, n)| r.tensor(d, n))
            .finish()
    }

    /// The cases of PyTorch's type promotion docs (torch.result_type), one per rule.
    #[test]
    fn result_type_follows_pytorchs_priority_classes() {
        assert_eq!(of(&[(F32, 2), (F64, 0)]), F32); // same category: dims win
        assert_eq!(of(&[(I64, 1), (F32, 0)]), F32); // 0-d brings a higher category
        assert_eq!(of(&[(I64, 1), (F64, 0)]), F64);
        assert_eq!(of(&[(U8, 1), (I64, 0)]), U8);
        assert_eq!(of(&[(Bool, 1), (U8, 0)]), U8);
        assert_eq!(of(&[(F16, 1), (BF16, 1)]), F32);
        assert_eq!(of(&[(U8, 0), (I64, 0)]), I64); // all 0-d: plain promotion
        assert_eq!(of(&[(F16, 1), (F64, 0), (I64, 3)]), F16);
        let with =
            |d: DType, n: usize, s: Scalar| ResultType::new().tensor(d, n).scalar(s).finish();
        assert_eq!(with(I64, 1, Scalar::Float(2.0)), F32); // int tensor * 2.0
        assert_eq!(with(I64, 1, Scalar::Int(2)), I64);
        assert_eq!(with(Bool, 1, Scalar::Int(1)), I64);
        assert_eq!(with(Bool, 1, Scalar::Bool(true)), Bool);
        assert_eq!(with(F16, 1, Scalar::Float(0.5)), F16);
        assert_eq!(with(U8, 1, Scalar::Int(300)), U8);
        assert_eq!(with(F64, 0, Scalar::Float(0.5)), F64); // 0-d beats a number
        assert_eq!(with(I64, 0, Scalar::Float(0.5)), F32);
        // int32 sits between u8 and i64 (torch.int32 + torch.int64 is int64).
        assert_eq!(of(&[(I32, 1), (I64, 1)]), I64);
        assert_eq!(of(&[(U8, 1), (I32, 1)]), I32);
        assert_eq!(of(&[(I32, 1), (I64, 0)]), I32);
        assert_eq!(with(I32, 1, Scalar::Int(2)), I32);
        assert_eq!(with(I32, 1, Scalar::Float(2.0)), F32);
    }

    /// The branch-free rounding gives half's bits for every sign and exponent, each with
    /// mantissas around every rounding boundary (ties with odd and even kept parts), plus
    /// zeros, subnormals, the largest finite values (which round to infinity), infinities
    /// and NaNs.
    #[test]
    fn bf16_from_f32_matches_half() {
        let lows = [
            0u32, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1_0000, 0x1_7FFF, 0x1_8000,
        ];
        for high in 0..=0xFFFFu32 {
            for &low in &lows {
                let x = f32::from_bits((high << 16).wrapping_add(low));
                assert_eq!(
                    super::bf16_from_f32(x).to_bits(),
                    half::bf16::from_f32(x).to_bits(),
                    "{x:e} (bits {:#x})",
                    x.to_bits()
                );
            }
        }
    }
}
