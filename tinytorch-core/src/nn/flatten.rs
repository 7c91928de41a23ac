//! `nn.Flatten` and `nn.Identity`.

use crate::error::Result;
use crate::nn::Module;
use crate::tensor::Tensor;

/// `torch.nn.Flatten(start_dim, end_dim)` (PyTorch's defaults: 1, -1).
#[derive(Clone, Debug)]
pub struct Flatten {
    /// First dim flattened.
    pub start_dim: isize,
    /// Last dim flattened (inclusive).
    pub end_dim: isize,
    training: bool,
}

impl Flatten {
    /// `nn.Flatten(start_dim, end_dim)`.
    pub fn new(start_dim: isize, end_dim: isize) -> Flatten {
        Flatten {
            start_dim,
            end_dim,
            training: true,
        }
    }
}

impl Default for Flatten {
    /// `nn.Flatten()`: keep the batch dim, flatten the rest.
    fn default() -> Self {
        Flatten::new(1, -1)
    }
}

parameterless_module!(Flatten, |s, x| x.flatten(s.start_dim, s.end_dim));

/// `torch.nn.Identity`: returns its input.
#[derive(Clone, Debug)]
pub struct Identity {
    training: bool,
}

impl Identity {
    /// `nn.Identity()`.
    pub fn new() -> Identity {
        Identity { training: true }
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::new()
    }
}

parameterless_module!(Identity, |_s, x| Ok(x.clone()));
