//! `nn.functional.dropout` (inverted dropout), an op of its own because attention uses it too;
//! the module `nn::Dropout` wraps it.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Error unless the dropout probability `p` is in [0, 1].
pub(crate) fn check_dropout_p(p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid(
            "dropout",
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    Ok(())
}

/// `torch.nn.functional.dropout(x, p, training)`: in training, zero each element with
/// probability `p` and scale the survivors by `1 / (1 - p)`, so the expectation is
/// unchanged; outside training, the identity. `p` must be in [0, 1].
pub fn dropout(x: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    check_dropout_p(p)?;
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            "dropout",
            format!("expected a floating-point input, got {}", x.dtype()),
        ));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    if p == 1.0 {
        // Every element is dropped; multiplying keeps the graph (and NaN propagation) as PyTorch.
        return x.mul_scalar(0.0);
    }
    let keep = x.full_like(1.0 - p)?.bernoulli()?;
    x.mul(&keep)?.mul_scalar(1.0 / (1.0 - p))
}
