//! The feed-forward blocks of transformers: a GELU MLP (`fc2(gelu(fc1(x)))`, timm's `Mlp`
//! names) and Llama's SwiGLU (`down_proj(silu(gate_proj(x)) * up_proj(x))`, no biases).

use super::module::Module;
use super::Linear;
use crate::error::Result;
use crate::tensor::Tensor;

/// `fc2(gelu(fc1(x)))`.
pub struct GeluMlp {
    /// `dim -> hidden`.
    pub fc1: Linear,
    /// `hidden -> dim`.
    pub fc2: Linear,
}

impl GeluMlp {
    /// Linear layers with PyTorch's default initialisation and biases.
    pub fn new(dim: usize, hidden: usize) -> Result<Self> {
        Ok(GeluMlp {
            fc1: Linear::new(dim, hidden, true)?,
            fc2: Linear::new(hidden, dim, true)?,
        })
    }
}

impl Module for GeluMlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.call(&self.fc1.call(x)?.gelu()?)
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![("fc1".into(), &self.fc1), ("fc2".into(), &self.fc2)]
    }
}

/// Llama's gated MLP: `down_proj(silu(gate_proj(x)) * up_proj(x))`.
pub struct SwiGlu {
    /// `dim -> hidden`, through SiLU.
    pub gate_proj: Linear,
    /// `dim -> hidden`.
    pub up_proj: Linear,
    /// `hidden -> dim`.
    pub down_proj: Linear,
}

impl SwiGlu {
    /// Bias-free linear layers, as in Llama.
    pub fn new(dim: usize, hidden: usize) -> Result<Self> {
        Ok(SwiGlu {
            gate_proj: Linear::new(dim, hidden, false)?,
            up_proj: Linear::new(dim, hidden, false)?,
            down_proj: Linear::new(hidden, dim, false)?,
        })
    }
}

impl Module for SwiGlu {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gated = self
            .gate_proj
            .call(x)?
            .silu()?
            .mul(&self.up_proj.call(x)?)?;
        self.down_proj.call(&gated)
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("gate_proj".into(), &self.gate_proj),
            ("up_proj".into(), &self.up_proj),
            ("down_proj".into(), &self.down_proj),
        ]
    }
}
