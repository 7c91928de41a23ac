//! Convolution layers (`torch.nn.Conv1d`, `Conv2d`, `ConvTranspose2d`).

use crate::error::{Error, Result};
use crate::nn::Module;
use crate::ops::ConvPadding;
use crate::tensor::{DType, Device, Tensor};

/// `U(-bound, bound)` leaf parameter with `bound = 1/sqrt(fan_in)` (PyTorch's default conv
/// init for both weight and bias).
fn uniform_param(shape: &[usize], fan_in: usize) -> Result<Tensor> {
    let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
    let t = Tensor::zeros(shape, DType::F32, Device::Cpu)?;
    super::init::uniform_(&t, -bound, bound)?;
    t.requires_grad_(true)
}

/// `weight` and, when present, `bias`, under PyTorch's parameter names.
fn weight_and_bias(weight: &Tensor, bias: &Option<Tensor>) -> Vec<(String, Tensor)> {
    let mut v = vec![("weight".to_string(), weight.clone())];
    if let Some(b) = bias {
        v.push(("bias".to_string(), b.clone()));
    }
    v
}

fn check_channels(op: &'static str, cin: usize, cout: usize, groups: usize) -> Result<()> {
    if groups == 0 || !cin.is_multiple_of(groups) || !cout.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!("groups={groups} must divide in_channels={cin} and out_channels={cout}"),
        ));
    }
    Ok(())
}

/// The weight and (when `bias`) the bias of a convolution layer named `op`, after checking
/// that `groups` divides both channel counts. The weight is `(Co, Ci/groups, *kernel)`, or
/// `(Ci, Co/groups, *kernel)` when `transposed`; as in PyTorch, fan_in is the weight's
/// `size(1)` times the kernel size in both cases, and the weight is drawn before the bias.
fn conv_parameters(
    op: &'static str,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    kernel: &[usize],
    transposed: bool,
    bias: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    check_channels(op, in_channels, out_channels, groups)?;
    let (lead, split) = match transposed {
        true => (in_channels, out_channels / groups),
        false => (out_channels, in_channels / groups),
    };
    let fan_in = split * kernel.iter().product::<usize>();
    let shape: Vec<usize> = [lead, split].iter().chain(kernel).copied().collect();
    let weight = uniform_param(&shape, fan_in)?;
    let bias = bias
        .then(|| uniform_param(&[out_channels], fan_in))
        .transpose()?;
    Ok((weight, bias))
}

/// 2-D convolution layer (`torch.nn.Conv2d`): weight `(Co, Ci/groups, kh, kw)`, bias `(Co,)`.
pub struct Conv2d {
    /// `(out_channels, in_channels/groups, kh, kw)`.
    pub weight: Tensor,
    /// `(out_channels,)`, if enabled.
    pub bias: Option<Tensor>,
    /// Stride `(sh, sw)`.
    pub stride: [usize; 2],
    /// Padding mode or amounts.
    pub padding: ConvPadding,
    /// Dilation `(dh, dw)`.
    pub dilation: [usize; 2],
    /// Number of channel groups.
    pub groups: usize,
}

impl Conv2d {
    /// `nn.Conv2d(in, out, kernel_size, stride, padding, dilation, groups, bias)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: ConvPadding,
        dilation: [usize; 2],
        groups: usize,
        bias: bool,
    ) -> Result<Conv2d> {
        let (weight, bias) = conv_parameters(
            "Conv2d",
            in_channels,
            out_channels,
            groups,
            &kernel,
            false,
            bias,
        )?;
        Ok(Conv2d {
            weight,
            bias,
            stride,
            padding,
            dilation,
            groups,
        })
    }
}

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        weight_and_bias(&self.weight, &self.bias)
    }
}

/// 1-D convolution layer (`torch.nn.Conv1d`): weight `(Co, Ci/groups, k)`, bias `(Co,)`.
pub struct Conv1d {
    /// `(out_channels, in_channels/groups, k)`.
    pub weight: Tensor,
    /// `(out_channels,)`, if enabled.
    pub bias: Option<Tensor>,
    /// Stride.
    pub stride: usize,
    /// Padding mode or amount (`Explicit(_, p)` uses `p`).
    pub padding: ConvPadding,
    /// Dilation.
    pub dilation: usize,
    /// Number of channel groups.
    pub groups: usize,
}

impl Conv1d {
    /// `nn.Conv1d(in, out, kernel_size, stride, padding, dilation, groups, bias)`; an explicit
    /// padding `p` is given as `ConvPadding::Explicit(0, p)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: usize,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
        bias: bool,
    ) -> Result<Conv1d> {
        let (weight, bias) = conv_parameters(
            "Conv1d",
            in_channels,
            out_channels,
            groups,
            &[kernel],
            false,
            bias,
        )?;
        Ok(Conv1d {
            weight,
            bias,
            stride,
            padding,
            dilation,
            groups,
        })
    }
}

impl Module for Conv1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv1d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        weight_and_bias(&self.weight, &self.bias)
    }
}

/// Transposed 2-D convolution layer (`torch.nn.ConvTranspose2d`): weight
/// `(Ci, Co/groups, kh, kw)`, bias `(Co,)`.
pub struct ConvTranspose2d {
    /// `(in_channels, out_channels/groups, kh, kw)`.
    pub weight: Tensor,
    /// `(out_channels,)`, if enabled.
    pub bias: Option<Tensor>,
    /// Stride.
    pub stride: [usize; 2],
    /// Padding.
    pub padding: [usize; 2],
    /// Extra size on the bottom/right of the output.
    pub output_padding: [usize; 2],
    /// Number of channel groups.
    pub groups: usize,
    /// Dilation.
    pub dilation: [usize; 2],
}

impl ConvTranspose2d {
    /// `nn.ConvTranspose2d(in, out, kernel_size, stride, padding, output_padding, groups,
    /// bias, dilation)`; PyTorch's fan_in here is `weight.size(1) * kh * kw`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
        bias: bool,
        dilation: [usize; 2],
    ) -> Result<ConvTranspose2d> {
        let (weight, bias) = conv_parameters(
            "ConvTranspose2d",
            in_channels,
            out_channels,
            groups,
            &kernel,
            true,
            bias,
        )?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        })
    }
}

impl Module for ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv_transpose2d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.output_padding,
            self.groups,
            self.dilation,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        weight_and_bias(&self.weight, &self.bias)
    }
}
