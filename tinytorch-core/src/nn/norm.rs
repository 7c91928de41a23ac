//! Normalisation layers (`torch.nn.LayerNorm`, `RMSNorm`, `GroupNorm`, `BatchNorm1d/2d`): their
//! parameters and running statistics; the functions they call are ops ([`crate::ops::norm`]).

use super::Module;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::ops::norm::{batch_norm_then, group_norm, layer_norm, rms_norm, After};
use crate::tensor::{DType, Device, Tensor};

fn param(shape: &[usize], value: f64) -> Result<Tensor> {
    Tensor::full(shape, value, DType::F32, Device::Cpu)?.requires_grad_(true)
}

/// Layer normalisation module (`torch.nn.LayerNorm`): parameters `weight` (ones) and `bias`
/// (zeros) of `normalized_shape` when `elementwise_affine`.
pub struct LayerNorm {
    normalized_shape: Vec<usize>,
    eps: f64,
    /// Scale, shape `normalized_shape` (None without elementwise affine).
    pub weight: Option<Tensor>,
    /// Shift, shape `normalized_shape`.
    pub bias: Option<Tensor>,
}

impl LayerNorm {
    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine)`, f32 parameters on the CPU.
    pub fn new(normalized_shape: &[usize], eps: f64, elementwise_affine: bool) -> Result<Self> {
        LayerNorm::new_with_bias(normalized_shape, eps, elementwise_affine, true)
    }

    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)`: `bias = false` keeps
    /// the scale and drops the shift.
    pub fn new_with_bias(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
    ) -> Result<Self> {
        let weight = elementwise_affine
            .then(|| param(normalized_shape, 1.0))
            .transpose()?;
        let bias = (elementwise_affine && bias)
            .then(|| param(normalized_shape, 0.0))
            .transpose()?;
        Ok(LayerNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            bias,
        })
    }
}

/// `(name, tensor)` pairs for the optional parameters that exist.
fn named(pairs: &[(&str, &Option<Tensor>)]) -> Vec<(String, Tensor)> {
    pairs
        .iter()
        .filter_map(|(n, t)| t.as_ref().map(|t| (n.to_string(), t.clone())))
        .collect()
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        layer_norm(
            x,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        named(&[("weight", &self.weight), ("bias", &self.bias)])
    }
}

/// RMS normalisation module (`torch.nn.RMSNorm`): parameter `weight` (ones).
pub struct RMSNorm {
    normalized_shape: Vec<usize>,
    eps: Option<f64>,
    /// Scale, shape `normalized_shape` (None without elementwise affine).
    pub weight: Option<Tensor>,
}

impl RMSNorm {
    /// `nn.RMSNorm(normalized_shape, eps, elementwise_affine)`; `eps = None` uses the dtype's
    /// machine epsilon.
    pub fn new(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
    ) -> Result<Self> {
        let weight = if elementwise_affine {
            Some(param(normalized_shape, 1.0)?)
        } else {
            None
        };
        Ok(RMSNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
        })
    }
}

impl Module for RMSNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        rms_norm(x, &self.normalized_shape, self.weight.as_ref(), self.eps)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        named(&[("weight", &self.weight)])
    }
}

/// Group normalisation module (`torch.nn.GroupNorm`): per-channel `weight` (ones) and
/// `bias` (zeros) when `affine`.
pub struct GroupNorm {
    num_groups: usize,
    eps: f64,
    /// Per-channel scale.
    pub weight: Option<Tensor>,
    /// Per-channel shift.
    pub bias: Option<Tensor>,
}

impl GroupNorm {
    /// `nn.GroupNorm(num_groups, num_channels, eps, affine)`; errors when `num_channels` is
    /// not divisible by `num_groups`.
    pub fn new(num_groups: usize, num_channels: usize, eps: f64, affine: bool) -> Result<Self> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::invalid(
                "GroupNorm",
                format!(
                    "num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
                ),
            ));
        }
        let (weight, bias) = if affine {
            (
                Some(param(&[num_channels], 1.0)?),
                Some(param(&[num_channels], 0.0)?),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            num_groups,
            eps,
            weight,
            bias,
        })
    }
}

impl Module for GroupNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        group_norm(
            x,
            self.num_groups,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        named(&[("weight", &self.weight), ("bias", &self.bias)])
    }
}

/// Batch normalisation module (`torch.nn.BatchNorm1d/2d/3d`; the input rank is not checked
/// beyond `(N, C, *)`). Parameters `weight`/`bias`; buffers `running_mean`, `running_var`,
/// `num_batches_tracked` (i64), named as in PyTorch's state dict.
pub struct BatchNorm {
    eps: f64,
    momentum: f64,
    training: bool,
    /// Per-channel scale (ones).
    pub weight: Option<Tensor>,
    /// Per-channel shift (zeros).
    pub bias: Option<Tensor>,
    /// Running mean (zeros), updated in training mode.
    pub running_mean: Option<Tensor>,
    /// Running (unbiased) variance (ones), updated in training mode.
    pub running_var: Option<Tensor>,
    /// Number of training batches seen (0-d i64).
    pub num_batches_tracked: Option<Tensor>,
}

/// `nn.BatchNorm1d`: the same module as [`BatchNorm`] (inputs `(N, C)` or `(N, C, L)`).
pub type BatchNorm1d = BatchNorm;
/// `nn.BatchNorm2d`: the same module as [`BatchNorm`] (inputs `(N, C, H, W)`).
pub type BatchNorm2d = BatchNorm;

impl BatchNorm {
    /// `nn.BatchNorm*d(num_features)` with PyTorch's defaults (eps 1e-5, momentum 0.1,
    /// affine, tracking running stats), in training mode.
    pub fn new(num_features: usize) -> Result<Self> {
        Self::with_options(num_features, 1e-5, 0.1, true, true)
    }

    /// `nn.BatchNorm*d(num_features, eps, momentum, affine, track_running_stats)`.
    pub fn with_options(
        num_features: usize,
        eps: f64,
        momentum: f64,
        affine: bool,
        track_running_stats: bool,
    ) -> Result<Self> {
        let (weight, bias) = if affine {
            (
                Some(param(&[num_features], 1.0)?),
                Some(param(&[num_features], 0.0)?),
            )
        } else {
            (None, None)
        };
        let (running_mean, running_var, num_batches_tracked) = if track_running_stats {
            (
                Some(Tensor::zeros(&[num_features], DType::F32, Device::Cpu)?),
                Some(Tensor::ones(&[num_features], DType::F32, Device::Cpu)?),
                Some(Tensor::zeros(&[], DType::I64, Device::Cpu)?),
            )
        } else {
            (None, None, None)
        };
        Ok(BatchNorm {
            eps,
            momentum,
            training: true,
            weight,
            bias,
            running_mean,
            running_var,
            num_batches_tracked,
        })
    }

    /// The value added to the variance before its square root.
    pub fn eps(&self) -> f64 {
        self.eps
    }
    /// The weight of a batch's statistics in the running ones.
    pub fn momentum(&self) -> f64 {
        self.momentum
    }

    /// `module(x).relu()`, as one op ([`batch_norm_relu`](crate::ops::norm::batch_norm_relu):
    /// in training on the CPU the ReLU runs inside the batch norm's own passes) when the
    /// module has no hooks, which must see the batch norm's own output.
    pub fn call_relu(&self, x: &Tensor) -> Result<Tensor> {
        if super::hooks::has_hooks(self) {
            return self.call(x)?.relu();
        }
        self.normalise(x, After::Relu)
    }

    /// `(module(x) + residual).relu()`, the end of a residual block, as one op
    /// ([`batch_norm_add_relu`](crate::ops::norm::batch_norm_add_relu): in training on the
    /// CPU the sum and the ReLU run inside the batch norm's output pass) when the module has
    /// no hooks.
    pub fn call_add_relu(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        if super::hooks::has_hooks(self) {
            return self.call(x)?.add(residual)?.relu();
        }
        self.normalise(x, After::AddRelu(residual))
    }

    /// The forward, followed by what `after` says.
    fn normalise(&self, x: &Tensor, after: After<'_>) -> Result<Tensor> {
        // Without running stats, evaluation also uses the batch statistics, as in PyTorch.
        let use_batch_stats = self.training || self.running_mean.is_none();
        if self.training {
            if let Some(n) = &self.num_batches_tracked {
                let _guard = no_grad();
                n.add_scalar_(1)?;
            }
        }
        let running = (self.running_mean.as_ref(), self.running_var.as_ref());
        let (w, b) = (self.weight.as_ref(), self.bias.as_ref());
        let (stats, m, eps) = (use_batch_stats, self.momentum, self.eps);
        batch_norm_then(x, running, w, b, stats, m, eps, after)
    }
}

impl Module for BatchNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.normalise(x, After::Nothing)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        named(&[("weight", &self.weight), ("bias", &self.bias)])
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        named(&[
            ("running_mean", &self.running_mean),
            ("running_var", &self.running_var),
            ("num_batches_tracked", &self.num_batches_tracked),
        ])
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
    fn is_training(&self) -> bool {
        self.training
    }
}
