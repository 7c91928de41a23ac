//! Activation modules (`torch.nn.ReLU`, ...), thin wrappers over the tensor methods.

use crate::error::Result;
use crate::nn::Module;
use crate::tensor::Tensor;

/// `torch.nn.ReLU`.
#[derive(Clone, Debug)]
pub struct ReLU {
    training: bool,
}

impl ReLU {
    /// `nn.ReLU()`.
    pub fn new() -> ReLU {
        ReLU { training: true }
    }
}

impl Default for ReLU {
    fn default() -> Self {
        ReLU::new()
    }
}

parameterless_module!(ReLU, |_s, x| x.relu());

/// `torch.nn.LeakyReLU(negative_slope)` (PyTorch's default slope is 0.01).
#[derive(Clone, Debug)]
pub struct LeakyReLU {
    /// Slope for negative inputs.
    pub negative_slope: f64,
    training: bool,
}

impl LeakyReLU {
    /// `nn.LeakyReLU(negative_slope)`.
    pub fn new(negative_slope: f64) -> LeakyReLU {
        LeakyReLU {
            negative_slope,
            training: true,
        }
    }
}

parameterless_module!(LeakyReLU, |s, x| x.leaky_relu(s.negative_slope));

/// `torch.nn.ELU(alpha)` (default alpha 1.0).
#[derive(Clone, Debug)]
pub struct ELU {
    /// Scale of the negative branch.
    pub alpha: f64,
    training: bool,
}

impl ELU {
    /// `nn.ELU(alpha)`.
    pub fn new(alpha: f64) -> ELU {
        ELU {
            alpha,
            training: true,
        }
    }
}

parameterless_module!(ELU, |s, x| x.elu(s.alpha));

/// `torch.nn.GELU(approximate='none' | 'tanh')`; `approximate = true` is the tanh form.
#[derive(Clone, Debug)]
pub struct GELU {
    /// Use the tanh approximation.
    pub approximate: bool,
    training: bool,
}

impl GELU {
    /// `nn.GELU()` (`approximate = false`) or `nn.GELU(approximate='tanh')`.
    pub fn new(approximate: bool) -> GELU {
        GELU {
            approximate,
            training: true,
        }
    }
}

parameterless_module!(GELU, |s, x| if s.approximate {
    x.gelu_tanh()
} else {
    x.gelu()
});

/// `torch.nn.SiLU` (swish).
#[derive(Clone, Debug)]
pub struct SiLU {
    training: bool,
}

impl SiLU {
    /// `nn.SiLU()`.
    pub fn new() -> SiLU {
        SiLU { training: true }
    }
}

impl Default for SiLU {
    fn default() -> Self {
        SiLU::new()
    }
}

parameterless_module!(SiLU, |_s, x| x.silu());

/// `torch.nn.Sigmoid`.
#[derive(Clone, Debug)]
pub struct Sigmoid {
    training: bool,
}

impl Sigmoid {
    /// `nn.Sigmoid()`.
    pub fn new() -> Sigmoid {
        Sigmoid { training: true }
    }
}

impl Default for Sigmoid {
    fn default() -> Self {
        Sigmoid::new()
    }
}

parameterless_module!(Sigmoid, |_s, x| x.sigmoid());

/// `torch.nn.Tanh`.
#[derive(Clone, Debug)]
pub struct Tanh {
    training: bool,
}

impl Tanh {
    /// `nn.Tanh()`.
    pub fn new() -> Tanh {
        Tanh { training: true }
    }
}

impl Default for Tanh {
    fn default() -> Self {
        Tanh::new()
    }
}

parameterless_module!(Tanh, |_s, x| x.tanh());

/// `torch.nn.Softplus(beta, threshold)` (defaults 1.0 and 20.0).
#[derive(Clone, Debug)]
pub struct Softplus {
    /// `softplus(x) = log(1 + exp(beta x)) / beta`.
    pub beta: f64,
    /// Above `beta x > threshold` the function is linear.
    pub threshold: f64,
    training: bool,
}

impl Softplus {
    /// `nn.Softplus(beta, threshold)`.
    pub fn new(beta: f64, threshold: f64) -> Softplus {
        Softplus {
            beta,
            threshold,
            training: true,
        }
    }
}

parameterless_module!(Softplus, |s, x| x.softplus(s.beta, s.threshold));

/// `torch.nn.Softmax(dim)`.
#[derive(Clone, Debug)]
pub struct Softmax {
    /// The dim normalised over.
    pub dim: isize,
    training: bool,
}

impl Softmax {
    /// `nn.Softmax(dim)`.
    pub fn new(dim: isize) -> Softmax {
        Softmax {
            dim,
            training: true,
        }
    }
}

parameterless_module!(Softmax, |s, x| x.softmax(s.dim));

/// `torch.nn.LogSoftmax(dim)`.
#[derive(Clone, Debug)]
pub struct LogSoftmax {
    /// The dim normalised over.
    pub dim: isize,
    training: bool,
}

impl LogSoftmax {
    /// `nn.LogSoftmax(dim)`.
    pub fn new(dim: isize) -> LogSoftmax {
        LogSoftmax {
            dim,
            training: true,
        }
    }
}

parameterless_module!(LogSoftmax, |s, x| x.log_softmax(s.dim));
