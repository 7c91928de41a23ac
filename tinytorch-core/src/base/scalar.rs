//! `Scalar`: a plain number given to an op beside its tensors (`x * 2`, `x * 2.5`,
//! `x.masked_fill(m, 0)`), as PyTorch's `Scalar`. Its kind matters, not only its value: an
//! integer tensor times the integer 2 stays integral, times the float 2.0 becomes the default
//! float dtype, exactly as `torch.arange(3) * 2.0` does. Rust's `2` and `2.0` convert to the
//! two kinds, so `x.mul_scalar(2)` and `x.mul_scalar(2.0)` mean what they say.

use super::dtype::DType;
use std::fmt;

/// A number of one of PyTorch's three scalar kinds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean (`True`).
    Bool(bool),
    /// An integer (`2`).
    Int(i64),
    /// A floating-point number (`2.0`, `0.5`, `inf`).
    Float(f64),
}

impl Scalar {
    /// The value as f64 (booleans are 0 or 1; integers beyond 2^53 round).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// True for a floating-point scalar.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// The dtype PyTorch gives this number when it takes part in type promotion (a "wrapped
    /// number"): bool, i64, or the default float dtype f32.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            // `{:?}` keeps the float visible as one (`2.0`, not `2`).
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<u8> for Scalar {
    fn from(v: u8) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_their_kind() {
        assert_eq!(Scalar::from(2), Scalar::Int(2));
        assert_eq!(Scalar::from(2.0), Scalar::Float(2.0));
        assert_eq!(Scalar::from(true), Scalar::Bool(true));
        assert_eq!(Scalar::from(2).dtype(), DType::I64);
        assert_eq!(Scalar::from(2.0).dtype(), DType::F32);
        assert_eq!(Scalar::from(2.0).to_string(), "2.0");
        assert_eq!(Scalar::from(-3).to_string(), "-3");
    }
}
