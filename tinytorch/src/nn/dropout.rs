//! `nn.Dropout` and `nn.functional.dropout` (inverted dropout).

use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::Tensor;

fn check_p(p: f64) -> Result<()> {
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
    check_p(p)?;
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            "dropout",
            format!("expected a floating-point input, got {:?}", x.dtype()),
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

/// `torch.nn.Dropout(p)` (PyTorch's default p is 0.5): [`dropout`] in training mode, the
/// identity in eval mode.
#[derive(Clone, Debug)]
pub struct Dropout {
    p: f64,
    training: bool,
}

impl Dropout {
    /// `nn.Dropout(p)`; errors unless `0 <= p <= 1`.
    pub fn new(p: f64) -> Result<Dropout> {
        check_p(p)?;
        Ok(Dropout { p, training: true })
    }

    /// The drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }
}

impl Module for Dropout {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        dropout(x, self.p, self.training)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
