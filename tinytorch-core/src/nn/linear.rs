//! `nn.Linear`: `y = x W^T + b`.

use crate::error::{Error, Result};
use crate::nn::init::{kaiming_uniform_, uniform_, FanMode};
use crate::nn::Module;
use crate::tensor::{DType, Device, Tensor};

/// `torch.nn.functional.linear`: `x @ weight^T + bias` over the last dim of `x`, any
/// leading dims. `weight` is `(out_features, in_features)`, `bias` `(out_features,)`.
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::shape(
            "linear",
            format!(
                "weight must be 2-D (out_features, in_features), got {:?}",
                weight.shape()
            ),
        ));
    }
    let in_features = weight.shape()[1];
    if x.ndim() == 0 || x.shape()[x.ndim() - 1] != in_features {
        return Err(Error::shape(
            "linear",
            format!(
                "mat1 and mat2 shapes cannot be multiplied: input {:?} has last dim {} but weight {:?} expects in_features={in_features}",
                x.shape(),
                x.shape().last().map_or("none".to_string(), |d| d.to_string()),
                weight.shape()
            ),
        ));
    }
    match bias {
        // Under autocast the bias joins the product's dtype, as in PyTorch.
        Some(b) => x.matmul_bias(&weight.t()?, b),
        None => x.matmul(&weight.t()?),
    }
}

/// A fully connected layer (`torch.nn.Linear(in_features, out_features, bias)`).
pub struct Linear {
    /// `(out_features, in_features)`.
    pub weight: Tensor,
    /// `(out_features,)`, when the layer has a bias.
    pub bias: Option<Tensor>,
    training: bool,
}

impl Linear {
    /// A layer with PyTorch's default initialisation: weight `kaiming_uniform_(a=sqrt(5))`
    /// (i.e. U(-1/sqrt(in), 1/sqrt(in))), bias U(-1/sqrt(in), 1/sqrt(in)); f32 on the CPU.
    pub fn new(in_features: usize, out_features: usize, bias: bool) -> Result<Linear> {
        Linear::new_with(in_features, out_features, bias, DType::F32, Device::Cpu)
    }

    /// [`Linear::new`] with a dtype and device (`factory_kwargs`).
    pub fn new_with(
        in_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
        device: Device,
    ) -> Result<Linear> {
        let weight = Tensor::zeros(&[out_features, in_features], dtype, device)?;
        kaiming_uniform_(&weight, 5f64.sqrt(), FanMode::FanIn, "leaky_relu")?;
        let bias = if bias {
            let b = Tensor::zeros(&[out_features], dtype, device)?;
            let bound = if in_features > 0 {
                1.0 / (in_features as f64).sqrt()
            } else {
                0.0
            };
            uniform_(&b, -bound, bound)?;
            Some(b.requires_grad_(true)?)
        } else {
            None
        };
        Ok(Linear {
            weight: weight.requires_grad_(true)?,
            bias,
            training: true,
        })
    }

    /// A layer holding the given parameters as they are (no initialisation drawn): how
    /// pretrained models are assembled from loaded weights. `weight` is
    /// `(out_features, in_features)`, `bias` `(out_features,)` of the same dtype and device.
    pub fn from_parameters(weight: Tensor, bias: Option<Tensor>) -> Result<Linear> {
        const OP: &str = "Linear::from_parameters";
        if weight.ndim() != 2 {
            return Err(Error::shape(
                OP,
                format!(
                    "weight must be 2-D (out_features, in_features), got {:?}",
                    weight.shape()
                ),
            ));
        }
        if let Some(b) = &bias {
            if b.shape() != [weight.shape()[0]] {
                return Err(Error::shape(
                    OP,
                    format!(
                        "bias must have shape [{}] for weight {:?}, got {:?}",
                        weight.shape()[0],
                        weight.shape(),
                        b.shape()
                    ),
                ));
            }
            if b.dtype() != weight.dtype() || b.device() != weight.device() {
                return Err(Error::dtype(
                    OP,
                    format!(
                        "bias ({} on {}) must match the weight ({} on {})",
                        b.dtype(),
                        b.device(),
                        weight.dtype(),
                        weight.device()
                    ),
                ));
            }
        }
        Ok(Linear {
            weight,
            bias,
            training: true,
        })
    }

    /// `in_features`.
    pub fn in_features(&self) -> usize {
        self.weight.shape()[1]
    }

    /// `out_features`.
    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }
}

impl Module for Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        linear(x, &self.weight, self.bias.as_ref())
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![("weight".to_string(), self.weight.clone())];
        if let Some(b) = &self.bias {
            out.push(("bias".to_string(), b.clone()));
        }
        out
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
