//! Parameter initialisation (`torch.nn.init`): every function fills a tensor in place under
//! `no_grad`, with PyTorch's formulas. The plain forms draw from the default generator; the
//! `_with` forms take an explicit [`Generator`].

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{Generator, Tensor};

/// Which fan Kaiming initialisation preserves (`mode='fan_in'` / `mode='fan_out'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// Preserve the variance of the activations in the forward pass (PyTorch's default).
    FanIn,
    /// Preserve the variance of the gradients in the backward pass.
    FanOut,
}

/// Recommended gain for a nonlinearity (`torch.nn.init.calculate_gain`). `param` is the
/// negative slope for `leaky_relu` (default 0.01 when `None`).
pub fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => Ok(1.0),
        "tanh" => Ok(5.0 / 3.0),
        "relu" => Ok(2f64.sqrt()),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            Ok((2.0 / (1.0 + slope * slope)).sqrt())
        }
        "selu" => Ok(0.75),
        other => Err(Error::invalid(
            "calculate_gain",
            format!("Unsupported nonlinearity {other}"),
        )),
    }
}

/// `(fan_in, fan_out)` of a weight (`torch.nn.init._calculate_fan_in_and_fan_out`):
/// `shape[1]` and `shape[0]` times the receptive field (product of the dims after the first
/// two). Needs at least 2 dims.
pub fn calculate_fan_in_and_fan_out(t: &Tensor) -> Result<(usize, usize)> {
    let shape = t.shape();
    if shape.len() < 2 {
        return Err(Error::shape(
            "calculate_fan_in_and_fan_out",
            format!(
                "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (shape {shape:?})"
            ),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

fn fan(t: &Tensor, mode: FanMode) -> Result<usize> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(t)?;
    Ok(match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    })
}

fn check_float(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!("expected a floating-point tensor, got {}", t.dtype()),
        ))
    }
}

/// Fill with U(a, b) from `gen` (`nn.init.uniform_(t, a, b, generator=gen)`).
pub fn uniform_with(t: &Tensor, a: f64, b: f64, gen: &mut Generator) -> Result<Tensor> {
    check_float("uniform_", t)?;
    let r = Tensor::rand_with(t.shape(), t.dtype(), t.device(), gen)?;
    fill_affine("uniform_", t, &r, a, b)
}

/// Fill with U(a, b) (`nn.init.uniform_`), default generator.
pub fn uniform_(t: &Tensor, a: f64, b: f64) -> Result<Tensor> {
    check_float("uniform_", t)?;
    let r = Tensor::rand(t.shape(), t.dtype(), t.device())?;
    fill_affine("uniform_", t, &r, a, b)
}

/// Fill with N(mean, std²) from `gen` (`nn.init.normal_(t, mean, std, generator=gen)`).
pub fn normal_with(t: &Tensor, mean: f64, std: f64, gen: &mut Generator) -> Result<Tensor> {
    check_float("normal_", t)?;
    check_std(std)?;
    let _guard = no_grad();
    let r = Tensor::randn_with(t.shape(), t.dtype(), t.device(), gen)?;
    t.copy_(&r.mul_scalar(std)?.add_scalar(mean)?)
}

/// Fill with N(mean, std²) (`nn.init.normal_`), default generator.
pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<Tensor> {
    check_float("normal_", t)?;
    check_std(std)?;
    let _guard = no_grad();
    let r = Tensor::randn(t.shape(), t.dtype(), t.device())?;
    t.copy_(&r.mul_scalar(std)?.add_scalar(mean)?)
}

fn check_std(std: f64) -> Result<()> {
    if std < 0.0 || std.is_nan() {
        return Err(Error::invalid(
            "normal_",
            format!("normal expects std >= 0.0, but found std {std}"),
        ));
    }
    Ok(())
}

/// Map uniform [0, 1) samples `r` to [a, b) and copy them into `t`.
fn fill_affine(op: &'static str, t: &Tensor, r: &Tensor, a: f64, b: f64) -> Result<Tensor> {
    if a > b {
        return Err(Error::invalid(
            op,
            format!("expects to return a [from, to) range, but found from={a} > to={b}"),
        ));
    }
    let _guard = no_grad();
    t.copy_(&r.mul_scalar(b - a)?.add_scalar(a)?)
}

/// Fill with `value` (`nn.init.constant_`).
pub fn constant_(t: &Tensor, value: f64) -> Result<Tensor> {
    let _guard = no_grad();
    t.fill_(value)
}

/// Fill with zeros (`nn.init.zeros_`).
pub fn zeros_(t: &Tensor) -> Result<Tensor> {
    constant_(t, 0.0)
}

/// Fill with ones (`nn.init.ones_`).
pub fn ones_(t: &Tensor) -> Result<Tensor> {
    constant_(t, 1.0)
}

fn xavier_std(t: &Tensor, gain: f64) -> Result<f64> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(t)?;
    Ok(gain * (2.0 / (fan_in + fan_out) as f64).sqrt())
}

/// Glorot uniform: U(-a, a) with `a = gain * sqrt(6 / (fan_in + fan_out))`
/// (`nn.init.xavier_uniform_`).
pub fn xavier_uniform_(t: &Tensor, gain: f64) -> Result<Tensor> {
    let a = 3f64.sqrt() * xavier_std(t, gain)?;
    uniform_(t, -a, a)
}

/// [`xavier_uniform_`] with an explicit generator.
pub fn xavier_uniform_with(t: &Tensor, gain: f64, gen: &mut Generator) -> Result<Tensor> {
    let a = 3f64.sqrt() * xavier_std(t, gain)?;
    uniform_with(t, -a, a, gen)
}

/// Glorot normal: N(0, std²) with `std = gain * sqrt(2 / (fan_in + fan_out))`
/// (`nn.init.xavier_normal_`).
pub fn xavier_normal_(t: &Tensor, gain: f64) -> Result<Tensor> {
    let std = xavier_std(t, gain)?;
    normal_(t, 0.0, std)
}

/// [`xavier_normal_`] with an explicit generator.
pub fn xavier_normal_with(t: &Tensor, gain: f64, gen: &mut Generator) -> Result<Tensor> {
    let std = xavier_std(t, gain)?;
    normal_with(t, 0.0, std, gen)
}

fn kaiming_std(t: &Tensor, a: f64, mode: FanMode, nonlinearity: &str) -> Result<f64> {
    let fan = fan(t, mode)?;
    let gain = calculate_gain(nonlinearity, Some(a))?;
    if fan == 0 {
        // PyTorch warns and leaves the tensor alone; an empty tensor has nothing to fill.
        return Ok(0.0);
    }
    Ok(gain / (fan as f64).sqrt())
}

/// He uniform: U(-bound, bound) with `bound = gain * sqrt(3 / fan)`, `gain =
/// calculate_gain(nonlinearity, a)` (`nn.init.kaiming_uniform_`; PyTorch's defaults are
/// `a = 0`, `FanMode::FanIn`, `"leaky_relu"`).
pub fn kaiming_uniform_(t: &Tensor, a: f64, mode: FanMode, nonlinearity: &str) -> Result<Tensor> {
    let bound = 3f64.sqrt() * kaiming_std(t, a, mode, nonlinearity)?;
    uniform_(t, -bound, bound)
}

/// [`kaiming_uniform_`] with an explicit generator.
pub fn kaiming_uniform_with(
    t: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
    gen: &mut Generator,
) -> Result<Tensor> {
    let bound = 3f64.sqrt() * kaiming_std(t, a, mode, nonlinearity)?;
    uniform_with(t, -bound, bound, gen)
}

/// He normal: N(0, std²) with `std = gain / sqrt(fan)` (`nn.init.kaiming_normal_`).
pub fn kaiming_normal_(t: &Tensor, a: f64, mode: FanMode, nonlinearity: &str) -> Result<Tensor> {
    let std = kaiming_std(t, a, mode, nonlinearity)?;
    normal_(t, 0.0, std)
}

/// [`kaiming_normal_`] with an explicit generator.
pub fn kaiming_normal_with(
    t: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
    gen: &mut Generator,
) -> Result<Tensor> {
    let std = kaiming_std(t, a, mode, nonlinearity)?;
    normal_with(t, 0.0, std, gen)
}
