//! Quantized Linear layers. Dynamic (`torch.ao.nn.quantized.dynamic.Linear`, what
//! `quantize_dynamic` makes of `nn.Linear`): int8 weights, activations quantized on every call
//! from their own range, f32 out. Static (`torch.ao.nn.quantized.Linear`, and `LinearReLU`
//! with `relu`): activations quantized with parameters calibrated beforehand, the output
//! requantized to its calibrated parameters, so every value that leaves the layer is one of
//! 256 levels, as in PyTorch's int8 model. Both take and return f32 tensors: the input's
//! quantization (PyTorch's `QuantStub`) and the output's dequantization are part of the layer.

use super::activation::Affine;
use super::gemm::Kernel;
use super::weight::{bias_values, quantize_per_channel, Epilogue, Int8Weight};
use crate::error::{Error, Result};
use crate::nn::{Linear, Module};
use crate::ops::with_spans;
use crate::tensor::{DType, Tensor};

/// Run `f` on `x`'s values, read in place (f32 on the CPU, last dimension `k`), and the
/// number of rows of `k` features.
pub(super) fn with_input_rows<R>(
    op: &'static str,
    x: &Tensor,
    k: usize,
    f: impl FnOnce(&[f32], usize) -> Result<R>,
) -> Result<R> {
    if x.ndim() == 0 || x.shape()[x.ndim() - 1] != k {
        return Err(Error::shape(
            op,
            format!("input of shape {:?} for {k} input features", x.shape()),
        ));
    }
    with_values(op, x, |values| f(values, values.len() / k.max(1)))
}

/// Run `f` on the values of `x` (f32 on the CPU), read in place under the storage's read
/// lock (a copy when `x` is not contiguous).
pub(super) fn with_values<R>(
    op: &'static str,
    x: &Tensor,
    f: impl FnOnce(&[f32]) -> Result<R>,
) -> Result<R> {
    check_f32_cpu(op, x)?;
    let x = x.contiguous()?;
    with_spans(&[Some(&x)], |spans| {
        let values = spans[0]
            .as_ref()
            .and_then(|s| s.cpu::<f32>())
            .ok_or_else(|| Error::invalid(op, "the input is not a host f32 buffer"))?;
        f(values)
    })
}

/// Quantized layers run on f32 CPU tensors.
pub(super) fn check_f32_cpu(op: &'static str, x: &Tensor) -> Result<()> {
    if !x.device().is_cpu() || x.dtype() != DType::F32 {
        return Err(Error::invalid(
            op,
            format!(
                "runs on f32 CPU tensors, got {} on {}",
                x.dtype(),
                x.device()
            ),
        ));
    }
    Ok(())
}

/// `values` (rows of `n`) in `x`'s shape with the last dimension `n`.
fn with_features(x: &Tensor, values: Vec<f32>, n: usize) -> Result<Tensor> {
    let mut shape = x.shape().to_vec();
    *shape.last_mut().expect("checked by with_input_rows") = n;
    Tensor::from_vec(values, &shape)
}

/// The int8 weights of `linear`.
fn linear_weight(op: &'static str, linear: &Linear) -> Result<Int8Weight> {
    let (values, scales) = quantize_per_channel(&linear.weight)?;
    let (n, k) = (linear.weight.shape()[0], linear.weight.shape()[1]);
    Int8Weight::new(
        op,
        &values,
        n,
        k,
        scales,
        bias_values(linear.bias.as_ref())?,
    )
}

/// A dynamically quantized Linear layer (see the module docs).
#[derive(Clone, Debug)]
pub struct DynamicQuantLinear {
    pub(super) weight: Int8Weight,
    /// The kernel of the int8 product (`Auto`: the fastest this CPU has).
    pub kernel: Kernel,
}

impl DynamicQuantLinear {
    const OP: &'static str = "dynamic quantized linear";

    /// Quantize `linear`'s weight per output channel (symmetric int8, PyTorch's
    /// `PerChannelMinMaxObserver`) and keep its bias in f32.
    pub fn from_linear(linear: &Linear) -> Result<DynamicQuantLinear> {
        Ok(DynamicQuantLinear {
            weight: linear_weight(Self::OP, linear)?,
            kernel: Kernel::Auto,
        })
    }

    /// The layer from stored parts (see `Int8Weight::new`).
    pub(super) fn from_weight(weight: Int8Weight) -> DynamicQuantLinear {
        DynamicQuantLinear {
            weight,
            kernel: Kernel::Auto,
        }
    }

    /// Input features.
    pub fn in_features(&self) -> usize {
        self.weight.k()
    }

    /// Output features.
    pub fn out_features(&self) -> usize {
        self.weight.n()
    }

    /// Bytes of the int8 weights, their scales and the bias.
    pub fn weight_bytes(&self) -> usize {
        self.weight.bytes()
    }
}

impl Module for DynamicQuantLinear {
    /// `x` of shape `(..., in_features)`, f32 on the CPU, to `(..., out_features)` f32.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = with_input_rows(Self::OP, x, self.in_features(), |values, m| {
            let act = Affine::of_values(values);
            Ok(self
                .weight
                .run(values, m, act, Epilogue::Float, self.kernel))
        })?;
        with_features(x, out, self.out_features())
    }

    /// None: the int8 weights are not trained.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

/// A statically quantized Linear layer, with the ReLU after it fused when `relu` (see the
/// module docs).
#[derive(Clone, Debug)]
pub struct QuantLinear {
    pub(super) weight: Int8Weight,
    /// The calibrated parameters of the input.
    pub input: Affine,
    /// The calibrated parameters of the output.
    pub output: Affine,
    /// Whether the ReLU that followed the float layer is fused in.
    pub relu: bool,
    /// The kernel of the int8 product (`Auto`: the fastest this CPU has).
    pub kernel: Kernel,
}

impl QuantLinear {
    const OP: &'static str = "quantized linear";

    /// Quantize `linear` with calibrated input and output parameters.
    pub fn from_linear(
        linear: &Linear,
        input: Affine,
        output: Affine,
        relu: bool,
    ) -> Result<QuantLinear> {
        Ok(QuantLinear::from_weight(
            linear_weight(Self::OP, linear)?,
            input,
            output,
            relu,
        ))
    }

    pub(super) fn from_weight(
        weight: Int8Weight,
        input: Affine,
        output: Affine,
        relu: bool,
    ) -> QuantLinear {
        QuantLinear {
            weight,
            input,
            output,
            relu,
            kernel: Kernel::Auto,
        }
    }

    /// Input features.
    pub fn in_features(&self) -> usize {
        self.weight.k()
    }

    /// Output features.
    pub fn out_features(&self) -> usize {
        self.weight.n()
    }
}

impl Module for QuantLinear {
    /// `x` of shape `(..., in_features)`, f32 on the CPU, to `(..., out_features)` f32 values
    /// on the output's 256 levels.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let epilogue = Epilogue::Requantize {
            out: self.output,
            relu: self.relu,
        };
        let out = with_input_rows(Self::OP, x, self.in_features(), |values, m| {
            Ok(self
                .weight
                .run(values, m, self.input, epilogue, self.kernel))
        })?;
        with_features(x, out, self.out_features())
    }

    /// None: the int8 weights are not trained.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}
