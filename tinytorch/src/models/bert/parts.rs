//! The two parameterised pieces every BERT block is made of — a dense layer and a LayerNorm —
//! as plain weight tensors applied with `nn::functional`, and how their parameters start.
//!
//! They are not `nn::Linear` / `nn::LayerNorm` because those draw PyTorch's default
//! initialisation on construction: loading a pretrained model would first draw 22 million
//! random numbers only to overwrite them, and BERT's own initialisation differs anyway.

use crate::autograd::needs_grad;
use crate::error::Result;
use crate::nn::functional::{layer_norm, linear};
use crate::nn::init::normal_;
use crate::tensor::{DType, Device, Tensor};

/// How freshly built parameters are filled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// BERT's initialisation (`BertPreTrainedModel._init_weights`): weights and embeddings
    /// N(0, std²), biases 0, LayerNorm weight 1 and bias 0.
    Normal {
        /// `initializer_range` of the config.
        std: f64,
    },
    /// Zeros everywhere (LayerNorm weight 1): the cheap start of a model whose weights are
    /// loaded right after.
    Zeros,
}

impl Init {
    /// A weight or embedding table of `shape`, requiring grad.
    pub(super) fn weight(self, shape: &[usize]) -> Result<Tensor> {
        let t = Tensor::zeros(shape, DType::F32, Device::Cpu)?;
        if let Init::Normal { std } = self {
            normal_(&t, 0.0, std)?;
        }
        t.requires_grad_(true)
    }

    /// A bias of `n` zeros, requiring grad.
    fn bias(self, n: usize) -> Result<Tensor> {
        Tensor::zeros(&[n], DType::F32, Device::Cpu)?.requires_grad_(true)
    }
}

/// `y + other` (`other` broadcast to `y`'s shape), written into `y` when no gradient is
/// needed. `y` must be a fresh result that nothing else holds (an op's output), so that the
/// write cannot be seen elsewhere.
pub(super) fn add_into(y: Tensor, other: &Tensor) -> Result<Tensor> {
    if needs_grad(&[&y, other]) {
        y.add(other)
    } else {
        y.add_(other)
    }
}

/// `nn.Linear(in, out)` as two tensors: `y = x W^T + b`.
pub(super) struct Dense {
    /// `(out, in)`.
    weight: Tensor,
    /// `(out,)`.
    bias: Tensor,
}

impl Dense {
    /// A layer from `inputs` to `outputs` features.
    pub(super) fn new(inputs: usize, outputs: usize, init: Init) -> Result<Dense> {
        Ok(Dense {
            weight: init.weight(&[outputs, inputs])?,
            bias: init.bias(outputs)?,
        })
    }

    /// x: (..., in) -> (..., out).
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if needs_grad(&[x, &self.weight, &self.bias]) {
            return linear(x, &self.weight, Some(&self.bias));
        }
        // Inference: the bias goes into the fresh product in place, which saves a pass into a
        // newly allocated (and page-faulted) output: 384->1536 over 4096 tokens, 81 -> 54 ms.
        let y = linear(x, &self.weight, None)?;
        add_into(y, &self.bias)
    }

    /// `weight` and `bias`, PyTorch's names.
    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![
            ("weight".into(), self.weight.clone()),
            ("bias".into(), self.bias.clone()),
        ]
    }
}

/// `nn.LayerNorm(dim, eps)` over the last dim.
pub(super) struct Norm {
    /// `(dim,)`, starts at 1.
    weight: Tensor,
    /// `(dim,)`, starts at 0.
    bias: Tensor,
    eps: f64,
}

impl Norm {
    /// A LayerNorm over `dim` features.
    pub(super) fn new(dim: usize, eps: f64, init: Init) -> Result<Norm> {
        Ok(Norm {
            weight: Tensor::ones(&[dim], DType::F32, Device::Cpu)?.requires_grad_(true)?,
            bias: init.bias(dim)?,
            eps,
        })
    }

    /// The number of features normalised.
    pub(super) fn dim(&self) -> usize {
        self.weight.shape()[0]
    }

    /// x: (..., dim) -> (..., dim).
    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        layer_norm(
            x,
            &[self.dim()],
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
        )
    }

    /// `weight` and `bias`, PyTorch's names.
    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![
            ("weight".into(), self.weight.clone()),
            ("bias".into(), self.bias.clone()),
        ]
    }
}
