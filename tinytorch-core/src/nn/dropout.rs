//! `nn.Dropout`, the module of [`crate::ops::dropout`] (inverted dropout).

use crate::error::Result;
use crate::nn::Module;
use crate::ops::{check_dropout_p, dropout};
use crate::tensor::Tensor;

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
        check_dropout_p(p)?;
        Ok(Dropout { p, training: true })
    }

    /// The drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }
}

parameterless_module!(Dropout, |s, x| dropout(x, s.p, s.training));
