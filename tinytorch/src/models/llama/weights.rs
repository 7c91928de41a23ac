//! Where the parameters of a Llama model being built come from: freshly initialised as
//! `transformers` does, or taken one by one out of a loaded state dict, checked against the
//! shape the config needs and converted to the requested dtype. Building from a state dict
//! this way allocates nothing but the converted tensors, and its errors name the key.

use crate::error::{Error, Result};
use crate::nn::init::normal_;
use crate::nn::Linear;
use crate::tensor::{DType, Device, Tensor};
use std::collections::HashMap;

/// What a parameter is, which decides its initial value.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// Linear weights and embeddings: N(0, initializer_range²).
    Matrix,
    /// Biases: zeros.
    Bias,
    /// RMSNorm weights: ones.
    Norm,
}

/// The source of a model's parameters.
pub(super) enum Weights {
    /// Hugging Face's `_init_weights`: matrices N(0, std²) from the global generator, biases
    /// 0, norm weights 1.
    Init { std: f64, dtype: DType },
    /// Tensors of a checkpoint by Hugging Face name; `origin` (a file or directory) goes into
    /// error messages.
    Loaded {
        tensors: HashMap<String, Tensor>,
        dtype: DType,
        origin: String,
    },
}

const OP: &str = "LlamaForCausalLM";

impl Weights {
    /// The parameter `name` of `shape`, requiring grad.
    pub(super) fn take(&mut self, name: &str, shape: &[usize], kind: Kind) -> Result<Tensor> {
        let t = match self {
            Weights::Init { std, dtype } => {
                let value = if matches!(kind, Kind::Norm) { 1.0 } else { 0.0 };
                let t = Tensor::full(shape, value, *dtype, Device::Cpu)?;
                if matches!(kind, Kind::Matrix) {
                    normal_(&t, 0.0, *std)?;
                }
                t
            }
            Weights::Loaded {
                tensors,
                dtype,
                origin,
            } => {
                let t = tensors.remove(name).ok_or_else(|| {
                    Error::invalid(
                        OP,
                        format!("'{origin}' has no tensor '{name}' (shape {shape:?} expected)"),
                    )
                })?;
                if t.shape() != shape {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "'{origin}': tensor '{name}' has shape {:?}, the config needs {shape:?}",
                            t.shape()
                        ),
                    ));
                }
                if !t.dtype().is_float() {
                    return Err(Error::dtype(
                        OP,
                        format!(
                            "'{origin}': tensor '{name}' is {}, expected a float dtype (f32, f16, bf16)",
                            t.dtype()
                        ),
                    ));
                }
                t.to_dtype(*dtype)?
            }
        };
        t.requires_grad_(true)
    }

    /// `nn.Linear(inputs, outputs, bias)` named `name` (`name.weight`, `name.bias`).
    pub(super) fn linear(
        &mut self,
        name: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<Linear> {
        let weight = self.take(&format!("{name}.weight"), &[outputs, inputs], Kind::Matrix)?;
        let bias = bias
            .then(|| self.take(&format!("{name}.bias"), &[outputs], Kind::Bias))
            .transpose()?;
        Linear::from_parameters(weight, bias)
    }

    /// After every parameter was taken: a checkpoint's leftover keys are an error (they mean
    /// another model), except those `ignored` accepts.
    pub(super) fn finish(self, ignored: impl Fn(&str) -> bool) -> Result<()> {
        if let Weights::Loaded {
            tensors, origin, ..
        } = self
        {
            let mut extra: Vec<&String> = tensors.keys().filter(|k| !ignored(k)).collect();
            if !extra.is_empty() {
                extra.sort();
                return Err(Error::invalid(
                    OP,
                    format!("'{origin}' has tensors that are not part of a Llama model of this config: {extra:?}"),
                ));
            }
        }
        Ok(())
    }
}
