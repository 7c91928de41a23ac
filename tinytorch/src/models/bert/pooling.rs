//! From token states to one sentence vector: mean pooling over the attention mask
//! (sentence-transformers' `Pooling` with `pooling_mode_mean_tokens`) and L2 normalisation
//! (its `Normalize` module, `torch.nn.functional.normalize(x, p=2, dim=1)`).

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// The mean of the token states whose mask is non-zero.
///
/// hidden: (B, T, H) float; attention_mask: (B, T), 1 on tokens and 0 on padding, any dtype.
/// Returns (B, H). A row with no tokens gives zeros (the count is clamped to 1e-9, as in
/// sentence-transformers, instead of dividing by zero).
pub fn mean_pooling(hidden: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
    let hs = hidden.shape();
    if hs.len() != 3 || attention_mask.shape() != &hs[..2] {
        return Err(Error::shape(
            "mean_pooling",
            format!(
                "expected hidden (B, T, H) and attention_mask (B, T), got {:?} and {:?}",
                hs,
                attention_mask.shape()
            ),
        ));
    }
    let mask = attention_mask.to_dtype(hidden.dtype())?.unsqueeze(-1)?; // (B, T, 1)
    let summed = hidden.mul(&mask)?.sum(&[1], false)?; // (B, H)
    let counts = mask.sum(&[1], false)?.clamp_min(1e-9)?; // (B, 1)
    summed.div(&counts)
}

/// Divide each vector along `dim` by its Euclidean norm, clamped below at 1e-12 so that a
/// zero vector stays zero (`F.normalize(x, p=2, dim=dim)`).
pub fn l2_normalize(x: &Tensor, dim: isize) -> Result<Tensor> {
    if !matches!(
        x.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16
    ) {
        return Err(Error::dtype(
            "l2_normalize",
            format!("expected a floating-point tensor, got {}", x.dtype()),
        ));
    }
    let norm = x.norm(2.0, &[dim], true)?.clamp_min(1e-12)?;
    x.div(&norm)
}
